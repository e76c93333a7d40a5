package job

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const propIters = 20000

func claimed(client string, start, deadline int64) State {
	return State{Phase: Claimed, Client: []byte(client), Start: start, Deadline: deadline}
}

func finished(client string, at int64, result string) State {
	return State{Phase: Finished, Client: []byte(client), At: at, Result: []byte(result)}
}

func collected(at int64) State { return State{Phase: Collected, At: at} }

// tomb is the Ready tombstone of the claim (client, start).
func tomb(client string, start int64) State {
	return State{Phase: Ready, Client: []byte(client), Start: start}
}

// fieldsEqual compares every field of two states directly, independently
// of Compare.
func fieldsEqual(a, b State) bool {
	return a.Phase == b.Phase && bytes.Equal(a.Client, b.Client) && a.Start == b.Start &&
		a.Deadline == b.Deadline && a.At == b.At && bytes.Equal(a.Result, b.Result)
}

func sgn(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func TestCompareRules(t *testing.T) {
	tests := []struct {
		name string
		a, b State // want a > b
	}{
		// 1. the later phase wins, whatever the other fields say.
		{"claimed>ready", claimed("a", 1, 2), State{}},
		{"finished>claimed", finished("a", 900, "r"), claimed("z", 800, 1000)},
		{"finished>claimed (earlier claim)", finished("a", 1, "r"), claimed("z", 1<<40, 1<<41)},
		{"collected>finished", collected(1 << 40), finished("a", 1, "r")},
		{"collected>claimed", collected(1 << 40), claimed("z", 1<<41, 1<<42)},
		{"collected>ready", collected(1), State{}},
		{"finished>ready", finished("a", 1, "r"), State{}},
		{"finished>tombstone", finished("a", 1, "r"), tomb("z", 1<<40)},
		{"collected>tombstone", collected(1), tomb("z", 1<<40)},
		{"tombstone>ready", tomb("a", 1), State{}},
		// 2. claimed: the later claim (Start) wins ...
		{"re-claim later start", claimed("a", 20, 30), claimed("b", 10, 15)},
		{"re-claim later start, later deadline", claimed("a", 20, 100), claimed("z", 10, 11)},
		{"re-claim same client", claimed("a", 11, 50), claimed("a", 10, 12)},
		// ... and for the same claim, the earlier deadline (a release).
		{"release spreads", claimed("a", 10, 15), claimed("a", 10, 40)},
		{"release to start+1", claimed("a", 10, 11), claimed("a", 10, 1<<40)},
		// same start, different clients: the client ID decides, not the deadline.
		{"same start, client tie", claimed("b", 10, 40), claimed("a", 10, 15)},
		{"same start, longer client", claimed("ab", 10, 40), claimed("a", 10, 15)},
		// the tombstone of a claim beats that claim, released or not ...
		{"tombstone>its claim", tomb("a", 10), claimed("a", 10, 40)},
		{"tombstone>its release", tomb("a", 10), claimed("a", 10, 11)},
		// ... but not a later claim, nor an earlier one of a greater client.
		{"later claim>tombstone", claimed("b", 11, 12), tomb("a", 10)},
		{"later claim of the same client>tombstone", claimed("a", 11, 12), tomb("a", 10)},
		{"same start, greater client>tombstone", claimed("b", 10, 40), tomb("a", 10)},
		{"tombstone of greater client>claim", tomb("b", 10), claimed("a", 10, 40)},
		{"later tombstone>claim", tomb("a", 10), claimed("z", 9, 1<<40)},
		{"later tombstone>tombstone", tomb("a", 10), tomb("z", 9)},
		// 3. finished: the earlier At wins ...
		{"first result stands", finished("a", 5, "r1"), finished("b", 6, "r2")},
		{"first result stands, smaller client", finished("a", 5, "a"), finished("z", 7, "z")},
		// ... collected: the earlier At wins.
		{"first collection stands", collected(5), collected(6)},
		// 4. remaining ties: client, then result.
		{"finished client tie", finished("b", 5, "a"), finished("a", 5, "z")},
		{"finished result tie", finished("a", 5, "y"), finished("a", 5, "x")},
		{"finished longer result", finished("a", 5, "xx"), finished("a", 5, "x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c := Compare(tt.a, tt.b); c <= 0 {
				t.Errorf("Compare(a, b) = %d, want > 0\na = %+v\nb = %+v", c, tt.a, tt.b)
			}
			if c := Compare(tt.b, tt.a); c >= 0 {
				t.Errorf("Compare(b, a) = %d, want < 0", c)
			}
			if m := Merge(tt.a, tt.b); !fieldsEqual(m, tt.a) {
				t.Errorf("Merge(a, b) = %+v, want a", m)
			}
			if m := Merge(tt.b, tt.a); !fieldsEqual(m, tt.a) {
				t.Errorf("Merge(b, a) = %+v, want a", m)
			}
			if Equal(tt.a, tt.b) {
				t.Error("Equal(a, b) = true")
			}
		})
	}
}

func TestCompareEqual(t *testing.T) {
	for _, s := range []State{{}, tomb("a", 1), claimed("a", 1, 2), finished("a", 1, "r"), collected(3)} {
		c := s
		c.Client = bytes.Clone(s.Client)
		c.Result = bytes.Clone(s.Result)
		if Compare(s, c) != 0 || !Equal(s, c) || !fieldsEqual(Merge(s, c), s) {
			t.Errorf("state %+v does not compare equal to its copy", s)
		}
	}
}

// randState draws a valid replicated state from small ranges, so that
// ties in every field happen often.
func randState(r *rand.Rand) State {
	clients := []string{"a", "b", "ab"}
	results := []string{"x", "y"}
	switch r.IntN(5) {
	case 0:
		return State{}
	case 4:
		return tomb(clients[r.IntN(len(clients))], 1+r.Int64N(3))
	case 1:
		start := 1 + r.Int64N(3)
		return claimed(clients[r.IntN(len(clients))], start, start+1+r.Int64N(3))
	case 2:
		return finished(clients[r.IntN(len(clients))], 1+r.Int64N(3), results[r.IntN(len(results))])
	}
	return collected(1 + r.Int64N(3))
}

// randAnyState draws a state with any phase and any fields, valid or not:
// Compare must order those totally too.
func randAnyState(r *rand.Rand) State {
	pick := func() []byte {
		return [][]byte{nil, []byte("a"), []byte("b")}[r.IntN(3)]
	}
	return State{
		Phase: Phase(r.IntN(6)), Client: pick(), Result: pick(),
		Start: r.Int64N(3), Deadline: r.Int64N(3), At: r.Int64N(3),
	}
}

func TestRandStateIsValid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[Phase]int{}
	tombs := 0
	for range 1000 {
		s := randState(r)
		if err := s.Validate(); err != nil {
			t.Fatalf("generator made an invalid state %+v: %v", s, err)
		}
		seen[s.Phase]++
		if s.IsTombstone() {
			tombs++
		}
	}
	if len(seen) != 4 || tombs == 0 || tombs == seen[Ready] {
		t.Fatalf("generator covers phases %v with %d tombstones, want 4 phases, plain and tombstone ready", seen, tombs)
	}
}

func TestMergeLaws(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var equalPairs int
	for range propIters {
		a, b, c := randState(r), randState(r), randState(r)
		ab := Merge(a, b)
		if !fieldsEqual(ab, Merge(b, a)) {
			t.Fatalf("not commutative: %+v, %+v", a, b)
		}
		if !fieldsEqual(Merge(ab, c), Merge(a, Merge(b, c))) {
			t.Fatalf("not associative: %+v, %+v, %+v", a, b, c)
		}
		if !fieldsEqual(Merge(a, a), a) {
			t.Fatalf("not idempotent: %+v", a)
		}
		if !fieldsEqual(Merge(State{}, a), a) || !fieldsEqual(Merge(a, State{}), a) {
			t.Fatalf("plain Ready{} is not the bottom: Merge with %+v", a)
		}
		if !fieldsEqual(ab, a) && !fieldsEqual(ab, b) {
			t.Fatalf("Merge(%+v, %+v) = %+v, neither input", a, b, ab)
		}
		if Compare(ab, a) < 0 || Compare(ab, b) < 0 {
			t.Fatalf("Merge(%+v, %+v) = %+v is below an input", a, b, ab)
		}
		if err := ab.Validate(); err != nil {
			t.Fatalf("merge of valid states is invalid: %v", err)
		}
		if fieldsEqual(a, b) {
			equalPairs++
		}
	}
	if equalPairs == 0 {
		t.Fatal("no equal pairs drawn; the ranges are too wide to test ties")
	}
}

func TestCompareOrder(t *testing.T) {
	gens := map[string]func(*rand.Rand) State{"valid": randState, "any": randAnyState}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			var zero int
			for range propIters {
				a, b, c := gen(r), gen(r), gen(r)
				ab, ba := Compare(a, b), Compare(b, a)
				if sgn(ab) != -sgn(ba) {
					t.Fatalf("not antisymmetric: Compare = %d, reversed %d\na=%+v\nb=%+v", ab, ba, a, b)
				}
				if (ab == 0) != fieldsEqual(a, b) {
					t.Fatalf("Compare = %d but fieldsEqual = %v\na=%+v\nb=%+v", ab, fieldsEqual(a, b), a, b)
				}
				if ab == 0 {
					zero++
				}
				bc, ac := Compare(b, c), Compare(a, c)
				if ab <= 0 && bc <= 0 && ac > 0 {
					t.Fatalf("not transitive (<=): a=%+v b=%+v c=%+v", a, b, c)
				}
				if ab < 0 && bc < 0 && ac >= 0 {
					t.Fatalf("not transitive (<): a=%+v b=%+v c=%+v", a, b, c)
				}
			}
			if zero == 0 {
				t.Fatal("no equal pairs drawn")
			}
		})
	}
}

// TestCompareSortConsistent sorts random multisets and checks every pair in
// the sorted order, which catches intransitivity a triple test may miss.
func TestCompareSortConsistent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		s := make([]State, 30)
		for i := range s {
			s[i] = randAnyState(r)
		}
		slices.SortFunc(s, Compare)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if Compare(s[i], s[j]) > 0 {
					t.Fatalf("sorted order broken at %d, %d: %+v > %+v", i, j, s[i], s[j])
				}
			}
		}
	}
}

func foldMerge(s []State) State {
	acc := s[0]
	for _, x := range s[1:] {
		acc = Merge(acc, x)
	}
	return acc
}

func TestMergeAnyOrderConverges(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range propIters / 2 {
		set := make([]State, 1+r.IntN(8))
		for i := range set {
			set[i] = randState(r)
		}
		want := slices.MaxFunc(set, Compare)
		for range 5 {
			perm := slices.Clone(set)
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			if got := foldMerge(perm); !fieldsEqual(got, want) {
				t.Fatalf("order %+v merges to %+v, want %+v", perm, got, want)
			}
			// A tree of merges (pairs, then pairs of pairs) converges too.
			for len(perm) > 1 {
				var next []State
				for i := 0; i < len(perm); i += 2 {
					if i+1 < len(perm) {
						next = append(next, Merge(perm[i], perm[i+1]))
					} else {
						next = append(next, perm[i])
					}
				}
				perm = next
			}
			if !fieldsEqual(perm[0], want) {
				t.Fatalf("tree merge gives %+v, want %+v", perm[0], want)
			}
		}
	}
}

func TestExpireThenMergeConverges(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var lapsed int
	for range propIters / 2 {
		set := make([]State, 1+r.IntN(8))
		for i := range set {
			set[i] = randState(r)
		}
		now := r.Int64N(8)
		expired := make([]State, len(set))
		for i, s := range set {
			expired[i] = Expire(s, now)
			if s.Phase == Claimed && expired[i].Phase == Ready {
				lapsed++
			}
		}
		want := slices.MaxFunc(expired, Compare)
		if want.Phase == Claimed && now >= want.Deadline {
			t.Fatalf("converged state %+v is a lapsed claim at %d", want, now)
		}
		for range 5 {
			perm := slices.Clone(set)
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			// Each replica expires what it holds and what it receives
			// before merging, then expires the result before storing.
			acc := Expire(perm[0], now)
			for _, x := range perm[1:] {
				acc = Expire(Merge(Expire(acc, now), Expire(x, now)), now)
			}
			if !fieldsEqual(acc, want) {
				t.Fatalf("at %d, order %+v gives %+v, want %+v", now, perm, acc, want)
			}
		}
	}
	if lapsed == 0 {
		t.Fatal("no claim lapsed; the ranges do not exercise Expire")
	}
}

func TestExpire(t *testing.T) {
	tests := []struct {
		name string
		s    State
		now  int64
		want State
	}{
		{"claim before deadline", claimed("a", 10, 20), 19, claimed("a", 10, 20)},
		{"claim at start", claimed("a", 10, 20), 10, claimed("a", 10, 20)},
		{"claim at deadline", claimed("a", 10, 20), 20, tomb("a", 10)},
		{"claim after deadline", claimed("a", 10, 20), 1 << 50, tomb("a", 10)},
		{"release", claimed("a", 10, 11), 11, tomb("a", 10)},
		{"ready", State{}, 1 << 50, State{}},
		{"tombstone", tomb("a", 10), 1 << 50, tomb("a", 10)},
		{"finished", finished("a", 5, "r"), 1 << 50, finished("a", 5, "r")},
		{"collected", collected(5), 1 << 50, collected(5)},
		{"temp-claimed", State{Phase: TempClaimed, Client: []byte("a"), Deadline: 3}, 1 << 50,
			State{Phase: TempClaimed, Client: []byte("a"), Deadline: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Expire(tt.s, tt.now); !fieldsEqual(got, tt.want) {
				t.Errorf("Expire(%+v, %d) = %+v, want %+v", tt.s, tt.now, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("c", MaxClientIDLen)
	tests := []struct {
		name string
		s    State
		ok   bool
	}{
		{"ready", State{}, true},
		{"ready empty slices", State{Client: []byte{}, Result: []byte{}}, true},
		{"ready with deadline", State{Deadline: 1}, false},
		{"ready with at", State{At: 1}, false},
		{"ready with result", State{Result: []byte("r")}, false},
		{"tombstone", tomb("a", 1), true},
		{"tombstone max client", tomb(long, 1), true},
		{"tombstone oversize client", tomb(long+"c", 1), false},
		{"tombstone without start", State{Client: []byte("a")}, false},
		{"tombstone without client", State{Start: 1}, false},
		{"tombstone negative start", tomb("a", -1), false},
		{"tombstone with deadline", State{Client: []byte("a"), Start: 1, Deadline: 2}, false},
		{"tombstone with at", State{Client: []byte("a"), Start: 1, At: 2}, false},
		{"tombstone with result", State{Client: []byte("a"), Start: 1, Result: []byte("r")}, false},

		{"claimed", claimed("a", 1, 2), true},
		{"claimed max client", claimed(long, 1, 2), true},
		{"claimed oversize client", claimed(long+"c", 1, 2), false},
		{"claimed no client", claimed("", 1, 2), false},
		{"claimed zero start", claimed("a", 0, 2), false},
		{"claimed negative start", claimed("a", -5, 2), false},
		{"claimed deadline = start", claimed("a", 2, 2), false},
		{"claimed deadline < start", claimed("a", 3, 2), false},
		{"claimed with at", State{Phase: Claimed, Client: []byte("a"), Start: 1, Deadline: 2, At: 1}, false},
		{"claimed with result", State{Phase: Claimed, Client: []byte("a"), Start: 1, Deadline: 2, Result: []byte("r")}, false},

		{"finished", finished("a", 1, "r"), true},
		{"finished max fields", finished(long, 1, strings.Repeat("r", MaxResultRefLen)), true},
		{"finished oversize result", finished("a", 1, strings.Repeat("r", MaxResultRefLen+1)), false},
		{"finished oversize client", finished(long+"c", 1, "r"), false},
		{"finished no client", finished("", 1, "r"), false},
		{"finished zero at", finished("a", 0, "r"), false},
		{"finished negative at", finished("a", -1, "r"), false},
		{"finished no result", finished("a", 1, ""), false},
		{"finished with start", State{Phase: Finished, Client: []byte("a"), At: 1, Result: []byte("r"), Start: 1}, false},
		{"finished with deadline", State{Phase: Finished, Client: []byte("a"), At: 1, Result: []byte("r"), Deadline: 1}, false},

		{"collected", collected(1), true},
		{"collected zero at", collected(0), false},
		{"collected negative at", collected(-1), false},
		{"collected with client", State{Phase: Collected, At: 1, Client: []byte("a")}, false},
		{"collected with result", State{Phase: Collected, At: 1, Result: []byte("r")}, false},
		{"collected with start", State{Phase: Collected, At: 1, Start: 1}, false},
		{"collected with deadline", State{Phase: Collected, At: 1, Deadline: 1}, false},
		{"collected oversize result", State{Phase: Collected, At: 1, Result: bytes.Repeat([]byte("r"), MaxResultRefLen+1)}, false},

		{"temp-claimed", State{Phase: TempClaimed, Client: []byte("a"), Start: 1, Deadline: 2}, false},
		{"temp-claimed bare", State{Phase: TempClaimed}, false},
		{"temp-claimed finished-shaped", State{Phase: TempClaimed, Client: []byte("a"), At: 1, Result: []byte("r")}, false},
		{"temp-claimed collected-shaped", State{Phase: TempClaimed, At: 1}, false},
		{"phase 5", State{Phase: 5, At: 1}, false},
		{"phase 255", State{Phase: 255}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.ok && err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", tt.s, err)
			}
			if !tt.ok && !errors.Is(err, ErrMalformed) {
				t.Errorf("Validate(%+v) = %v, want ErrMalformed", tt.s, err)
			}
		})
	}
}

func TestPhaseString(t *testing.T) {
	want := map[Phase]string{Ready: "ready", TempClaimed: "temp-claimed", Claimed: "claimed",
		Finished: "finished", Collected: "collected", 9: "phase(9)"}
	for p, w := range want {
		if got := p.String(); got != w {
			t.Errorf("Phase(%d).String() = %q, want %q", uint8(p), got, w)
		}
	}
	if !(Ready < Claimed && Claimed < Finished && Finished < Collected) {
		t.Error("phase constants are not in merge order")
	}
}
