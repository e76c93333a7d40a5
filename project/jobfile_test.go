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
`))
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
	if u, c, err := ParseJobFile([]byte(`{"app": "noop", "keywords": ["lhc"]}`)); err != nil || len(u) != 1 || c != 1 {
		t.Fatalf("JSON single job: %d units, %v", len(u), err)
	}
}

func TestParseJobFileErrors(t *testing.T) {
	for _, c := range []struct{ name, file, mention string }{
		{"not yaml", "app: [", "job file"},
		{"unknown field", "app: a\nkeywords: [k]\nbogus: 1\n", "bogus"},
		{"no app", "keywords: [k]\n", "no app"},
		{"no keywords", "app: a\n", "no keywords"},
		{"bad copies", "app: a\nkeywords: [k]\ncopies: 99\n", "copies"},
		{"bad t_finish", "app: a\nkeywords: [k]\nt_finish: soon\n", "t_finish"},
		{"empty sweep", "app: a\nkeywords: [k]\nsweep:\n  x: []\n", "expands to nothing"},
		{"backwards range", "app: a\nkeywords: [k]\nsweep:\n  x: {from: 5, to: 1}\n", "expands to nothing"},
		{"undefined parameter", "app: a\nargs: [\"{z}\"]\nkeywords: [k]\nsweep:\n  x: [1]\n", "does not define"},
		{"bad keyword", "app: a\nkeywords: [\"two words\"]\n", "keyword"},
		{"bad input", "app: a\nkeywords: [k]\ninputs: [{url: x, sha256: zz}]\n", "sha256"},
		{"huge sweep", "app: a\nkeywords: [k]\nsweep:\n  x: {from: 0, to: 2000}\n  y: {from: 0, to: 2000}\n", "more than"},
	} {
		_, _, err := ParseJobFile([]byte(c.file))
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
