package project

import (
	"strings"
	"testing"
)

func TestParseJobFile(t *testing.T) {
	units, copies, err := ParseJobFile([]byte(`
app: mandelbrot
args: ["{x}", "{y}", "64"]
keywords: [fractal, "fractal:{x}"]
copies: 2
t_finish: 10m
sweep:
  x: {from: 0, to: 2}
  y: ["a", "b"]
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 6 || copies != 2 || units[0].TFinish.Minutes() != 10 {
		t.Fatalf("%d units, %d copies", len(units), copies)
	}
	seen := map[string]bool{}
	for _, u := range units {
		seen[strings.Join(u.Args, " ")] = true
		if u.Keywords[1] != "fractal:"+u.Args[0] {
			t.Fatalf("keywords %v for args %v", u.Keywords, u.Args)
		}
	}
	if len(seen) != 6 || !seen["2 b 64"] || !seen["0 a 64"] {
		t.Fatalf("expanded %v", seen)
	}
	if u, c, err := ParseJobFile([]byte(`{"app": "noop", "keywords": ["lhc"]}`), ""); err != nil || len(u) != 1 || c != 1 {
		t.Fatalf("JSON single job: %d units, %v", len(u), err)
	}
}

// TestParseJobFileCommit: commit–reveal is on by default for copies 2 or
// more (the unit's quorum of commitments), off for one copy and when
// commit: false says so.
func TestParseJobFileCommit(t *testing.T) {
	for _, c := range []struct {
		name, file string
		commit     uint16
		waitMS     int64
	}{
		{"one copy", "app: a\n", 0, 0},
		{"two copies: on", "app: a\ncopies: 2\n", 2, 0},
		{"three copies: on, quorum 2", "app: a\ncopies: 3\nreveal_wait: 2m\n", 2, 120_000},
		{"commit: false", "app: a\ncopies: 2\ncommit: false\n", 0, 0},
		{"commit: true", "app: a\ncopies: 2\ncommit: true\n", 2, 0},
	} {
		units, _, err := ParseJobFile([]byte(c.file), "p")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if u := units[0]; u.Commit != c.commit || u.RevealWait.Milliseconds() != c.waitMS {
			t.Errorf("%s: commit %d reveal wait %v, want %d, %d ms", c.name, u.Commit, u.RevealWait, c.commit, c.waitMS)
		}
	}
}

func TestParseJobFileErrors(t *testing.T) {
	for _, c := range []struct{ name, file, mention string }{
		{"not yaml", "app: [", "not YAML"},
		{"unknown field", "app: a\nkeywords: [k]\nbogus: 1\n", "bogus"},
		{"no app", "keywords: [k]\n", "no app"},
		{"bad copies", "app: a\nkeywords: [k]\ncopies: 99\n", "copies"},
		{"bad t_finish", "app: a\nkeywords: [k]\nt_finish: soon\n", "t_finish"},
		{"empty sweep", "app: a\nkeywords: [k]\nsweep:\n  x: []\n", "expands to nothing"},
		{"backwards range", "app: a\nkeywords: [k]\nsweep:\n  x: {from: 5, to: 1}\n", "expands to nothing"},
		{"undefined parameter", "app: a\nargs: [\"{x}\", \"{z}\"]\nkeywords: [k]\nsweep:\n  x: [1]\n", "does not define"},
		{"bad keyword", "app: a\nkeywords: [\"two words\"]\n", "keyword"},
		{"bad input", "app: a\nkeywords: [k]\ninputs: [{url: x, sha256: zz}]\n", "sha256"},
		{"commit one copy", "app: a\ncommit: true\n", "copies 2 or more"},
		{"reveal_wait one copy", "app: a\nreveal_wait: 1m\n", "without commit"},
		{"reveal_wait commit off", "app: a\ncopies: 2\ncommit: false\nreveal_wait: 1m\n", "without commit"},
		{"commit not bool", "app: a\ncopies: 2\ncommit: maybe\n", "commit"},
		{"huge sweep", "app: a\nargs: [\"{x}\", \"{y}\"]\nkeywords: [k]\nsweep:\n  x: {from: 0, to: 2000}\n  y: {from: 0, to: 2000}\n", "more than"},
	} {
		_, _, err := ParseJobFile([]byte(c.file), "")
		if err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.mention)
		}
	}
}

func TestValidate(t *testing.T) {
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	cp := func(id, client string, out []byte, failed bool) Copy {
		return Copy{CID: id, ClientKey: []byte(client), Output: out, Failed: failed}
	}
	for _, tc := range []struct {
		name      string
		results   []Copy
		issued    int
		quorum    int
		status    string
		canonical string
	}{
		{"single copy", []Copy{cp("1", "x", a, false)}, 1, 1, UnitValid, "1"},
		{"single failed", []Copy{cp("1", "x", a, true)}, 1, 1, UnitInconclusive, ""},
		{"waiting", []Copy{cp("1", "x", a, false)}, 2, 2, UnitOpen, ""},
		{"agree", []Copy{cp("1", "x", a, false), cp("2", "y", a, false)}, 2, 2, UnitValid, "1"},
		{"disagree", []Copy{cp("1", "x", a, false), cp("2", "y", b, false)}, 2, 2, UnitInconclusive, ""},
		{"same client twice", []Copy{cp("1", "x", a, false), cp("2", "x", a, false)}, 2, 2, UnitInconclusive, ""},
		{"third breaks the tie", []Copy{cp("1", "x", a, false), cp("2", "y", b, false), cp("3", "z", b, false)}, 3, 2, UnitValid, "2"},
		{"failure is not agreement", []Copy{cp("1", "x", a, true), cp("2", "y", a, false), cp("3", "z", c, false)}, 3, 2, UnitInconclusive, ""},
	} {
		v := Validate(tc.results, tc.issued, tc.quorum, nil)
		if v.Status != tc.status || v.Canonical != tc.canonical {
			t.Errorf("%s: %+v, want %s %q", tc.name, v, tc.status, tc.canonical)
		}
		if v.Status == UnitValid {
			for _, r := range tc.results {
				want := !r.Failed && string(r.Output) == string(outputOf(tc.results, tc.canonical))
				if v.Valid[r.CID] != want {
					t.Errorf("%s: result %s valid=%v", tc.name, r.CID, v.Valid[r.CID])
				}
			}
		}
	}
}

func outputOf(rs []Copy, id string) []byte {
	for _, r := range rs {
		if r.CID == id {
			return r.Output
		}
	}
	return nil
}

// TestParseJobFileMessages: each mistake in a job file gets one line that
// names the field (and the line), never a Go type or a bare EOF.
func TestParseJobFileMessages(t *testing.T) {
	for _, c := range []struct{ name, file, mention string }{
		{"empty", "", "empty"},
		{"only a comment", "# nothing yet\n", "empty"},
		{"not a mapping", "- app: a\n", "mapping"},
		{"unknown field", "app: a\nargz: [x]\nkeywords: [k]\n", `line 2: unknown field "argz"`},
		{"unknown input field", "app: a\nkeywords: [k]\ninputs: [{url: x, sha: zz}]\n", `inputs[0]: line 3: unknown field "sha"`},
		{"unknown sweep field", "app: a\nargs: [\"{x}\"]\nkeywords: [k]\nsweep:\n  x: {from: 0, upto: 3}\n", `sweep "x": line 5: unknown field "upto"`},
		{"duplicate field", "app: a\napp: b\nkeywords: [k]\n", `line 2: field "app" given twice`},
		{"wrong type", "app: a\nkeywords: [k]\ncopies: two\n", `copies: line 3: want a whole number`},
		{"args not a list", "app: a\nargs: 5 6\nkeywords: [k]\n", `args: line 2: want a list`},
		{"copies 0", "app: a\nkeywords: [k]\ncopies: 0\n", "copies 0 out of 1..16"},
		{"unused sweep parameter", "app: a\nargs: [\"{x}\"]\nkeywords: [k]\nsweep:\n  x: [1, 2]\n  y: [1, 2]\n", `sweep "y": no argument or input file uses {y}`},
		{"sweep used in keywords only", "app: a\nkeywords: [\"k{x}\"]\nsweep:\n  x: [1, 2]\n", `sweep "x": no argument or input file uses {x}`},
	} {
		_, _, err := ParseJobFile([]byte(c.file), "")
		switch {
		case err == nil:
			t.Errorf("%s: accepted, want an error mentioning %q", c.name, c.mention)
		case !strings.Contains(err.Error(), c.mention) || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), "project.") || strings.Contains(err.Error(), "EOF"):
			t.Errorf("%s: %q, want one line mentioning %q", c.name, err, c.mention)
		}
	}
}

// TestParseJobFileProjectKeyword: the project's name is added to every
// unit's keywords that lack it, once; without keywords the file is fine
// for a project; t_finish defaults to DefaultTFinish.
func TestParseJobFileProjectKeyword(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []string
	}{
		{"other keyword", "app: a\nkeywords: [fractal]\n", []string{"lhc", "fractal"}},
		{"already there", "app: a\nkeywords: [fractal, lhc]\n", []string{"fractal", "lhc"}},
		{"no keywords", "app: a\n", []string{"lhc"}},
		{"from the sweep", "app: a\nargs: [\"{p}\"]\nkeywords: [\"{p}\"]\nsweep:\n  p: [lhc]\n", []string{"lhc"}},
	} {
		units, _, err := ParseJobFile([]byte(c.file), "lhc")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := units[0].Keywords; strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: keywords %v, want %v", c.name, got, c.want)
		}
		if units[0].TFinish != DefaultTFinish {
			t.Errorf("%s: t_finish %s, want the default %s", c.name, units[0].TFinish, DefaultTFinish)
		}
	}
}
