package project

import (
	"strings"
	"testing"
	"time"
)

func TestTrusted(t *testing.T) {
	v := func(pattern string) []bool { // newest first: 'v' valid, 'x' invalid
		out := make([]bool, len(pattern))
		for i, c := range pattern {
			out[i] = c == 'v'
		}
		return out
	}
	for _, c := range []struct {
		name     string
		latest   []bool
		min, win int
		want     bool
	}{
		{"new client", nil, 10, 20, false},
		{"one short", v(strings.Repeat("v", 9)), 10, 20, false},
		{"just enough", v(strings.Repeat("v", 10)), 10, 20, true},
		{"full window", v(strings.Repeat("v", 20)), 10, 20, true},
		{"invalid newest", v("x" + strings.Repeat("v", 19)), 10, 20, false},
		{"invalid oldest in window", v(strings.Repeat("v", 19) + "x"), 10, 20, false},
		{"invalid out of window", v(strings.Repeat("v", 20) + "x"), 10, 20, true},
		{"trust off", nil, 0, 20, true},
		{"threshold above the record", v(strings.Repeat("v", 20)), 1000, 1000, false},
	} {
		if got := Trusted(c.latest, c.min, c.win); got != c.want {
			t.Errorf("%s: Trusted = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSpotCheck(t *testing.T) {
	seed := []byte("test seed")
	for _, c := range []struct {
		p    float64
		want bool
	}{{0, false}, {-1, false}, {1, true}, {2, true}} {
		if got := SpotCheck(seed, 7, c.p); got != c.want {
			t.Errorf("p %v: %v, want %v", c.p, got, c.want)
		}
	}
	// Deterministic, and about p of the units: 1000 units at p = 0.1.
	n := 0
	for u := int64(1); u <= 1000; u++ {
		a, b := SpotCheck(seed, u, 0.1), SpotCheck(seed, u, 0.1)
		if a != b {
			t.Fatalf("unit %d: two draws differ", u)
		}
		if a {
			n++
		}
	}
	if n < 70 || n > 130 {
		t.Fatalf("%d of 1000 units drawn at p = 0.1", n)
	}
	// Another seed draws other units.
	same := 0
	for u := int64(1); u <= 1000; u++ {
		if SpotCheck(seed, u, 0.1) && SpotCheck([]byte("other"), u, 0.1) {
			same++
		}
	}
	if same > 30 {
		t.Fatalf("%d units drawn under both seeds: the seed does not key the draw", same)
	}
}

func TestDecideAdaptive(t *testing.T) {
	for _, c := range []struct {
		trusted, drawn bool
		want           string
	}{
		{false, false, AdaptiveReplicated},
		{false, true, AdaptiveReplicated},
		{true, true, AdaptiveSpotCheck},
		{true, false, AdaptiveSingle},
	} {
		if got := decideAdaptive(c.trusted, c.drawn); got != c.want {
			t.Errorf("trusted %v drawn %v: %s, want %s", c.trusted, c.drawn, got, c.want)
		}
	}
}

// TestDecideUnitAdaptive: an adaptive unit's one result is canonical
// alone only under AdaptiveSingle; replicated, it waits for a second
// agreeing copy from another client, as a unit of 2 copies.
func TestDecideUnitAdaptive(t *testing.T) {
	one := []Copy{{CID: "a", ClientKey: []byte("c1"), Output: []byte("x")}}
	two := append(one, Copy{CID: "b", ClientKey: []byte("c2"), Output: []byte("x")})
	liar := append(one, Copy{CID: "b", ClientKey: []byte("c2"), Output: []byte("y")})
	for _, c := range []struct {
		name     string
		u        unitState
		status   string
		another  bool
		canonNot string
	}{
		{"single", unitState{asked: 1, issued: 1, results: one, adaptive: true, decision: AdaptiveSingle}, UnitValid, false, ""},
		{"replicated, one result", unitState{asked: 1, issued: 1, results: one, adaptive: true, decision: AdaptiveReplicated}, UnitInconclusive, true, ""},
		{"replicated, copy out", unitState{asked: 1, issued: 2, results: one, adaptive: true, decision: AdaptiveReplicated}, UnitOpen, false, ""},
		{"spot-check agrees", unitState{asked: 1, issued: 2, results: two, adaptive: true, decision: AdaptiveSpotCheck}, UnitValid, false, ""},
		{"spot-check disagrees", unitState{asked: 1, issued: 2, results: liar, adaptive: true, decision: AdaptiveSpotCheck}, UnitInconclusive, true, ""},
		{"not adaptive, copies 1", unitState{asked: 1, issued: 1, results: one}, UnitValid, false, ""},
	} {
		v, _, another := decideUnit(&c.u, nil, 0)
		if v.Status != c.status || another != c.another {
			t.Errorf("%s: %s, another %v; want %s, %v", c.name, v.Status, another, c.status, c.another)
		}
	}
}

func TestParseJobFileAdaptive(t *testing.T) {
	units, copies, err := ParseJobFile([]byte("app: hashchain\nargs: [\"{i}\"]\nadaptive: true\nsweep:\n  i: [1, 2]\n"), "")
	if err != nil || copies != 1 || len(units) != 2 || !units[0].Adaptive || !units[1].Adaptive {
		t.Fatalf("adaptive file: %d units, copies %d, %v", len(units), copies, err)
	}
	if units, _, err := ParseJobFile([]byte("app: hashchain\n"), ""); err != nil || units[0].Adaptive {
		t.Fatalf("plain file adaptive: %v %v", units, err)
	}
	for _, file := range []string{
		"app: hashchain\nadaptive: true\ncopies: 2\n",
		"app: hashchain\nadaptive: true\ncopies: 2\ncommit: true\n",
		"app: hashchain\nadaptive: yes please\n",
	} {
		if _, _, err := ParseJobFile([]byte(file), ""); err == nil {
			t.Errorf("%q: no error", file)
		}
	}
}

// TestAdaptiveMigrates: a ledger written before adaptive replication
// (no adaptive tables) opens with them, reports no adaptive units, and
// makes its seed once.
func TestAdaptiveMigrates(t *testing.T) {
	path := t.TempDir() + "/ledger.db"
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DB().Exec(`DROP TABLE adaptive; DROP TABLE ledger_secrets; DROP INDEX results_client`); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if l, err = OpenLedger(path); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.Stats(time.Now())
	if err != nil || st.Adaptive != nil {
		t.Fatalf("stats of an old ledger: adaptive %v, %v", st.Adaptive, err)
	}
	a, err := l.AdaptiveSeed()
	if err != nil || len(a) != 32 {
		t.Fatalf("seed %x, %v", a, err)
	}
	if b, err := l.AdaptiveSeed(); err != nil || string(a) != string(b) {
		t.Fatalf("the seed changed: %x then %x, %v", a, b, err)
	}
}
