package project

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestValidateAndGrade: Validate groups successful results from distinct
// clients by the rule and decides at quorum; Grade judges results that
// arrive after the verdict against the canonical output.
func TestValidateAndGrade(t *testing.T) {
	cp := func(cid, client, out string, failed bool) Copy {
		return Copy{CID: cid, ClientKey: []byte(client), Output: []byte(out), Failed: failed}
	}
	for _, tc := range []struct {
		name      string
		results   []Copy
		issued    int
		status    string
		canonical string
	}{
		{"single copy", []Copy{cp("a", "c1", "x", false)}, 1, UnitValid, "a"},
		{"waiting for the second", []Copy{cp("a", "c1", "x", false)}, 2, UnitOpen, ""},
		{"two agree", []Copy{cp("a", "c1", "x", false), cp("b", "c2", "x", false)}, 2, UnitValid, "a"},
		{"two disagree", []Copy{cp("a", "c1", "x", false), cp("b", "c2", "y", false)}, 2, UnitInconclusive, ""},
		{"same client twice is no quorum", []Copy{cp("a", "c1", "x", false), cp("b", "c1", "x", false)}, 2, UnitInconclusive, ""},
		{"failed copies never agree", []Copy{cp("a", "c1", "", true), cp("b", "c2", "", true)}, 2, UnitInconclusive, ""},
		{"third copy breaks the tie", []Copy{cp("a", "c1", "lie", false), cp("b", "c2", "x", false), cp("c", "c3", "x", false)}, 3, UnitValid, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Validate(tc.results, tc.issued, Quorum(tc.issued), nil)
			if v.Status != tc.status || v.Canonical != tc.canonical {
				t.Fatalf("verdict %+v, want %s %q", v, tc.status, tc.canonical)
			}
			if v.Status != UnitValid {
				return
			}
			// Grading every result afterwards agrees with the verdict.
			g := Grade(tc.results, v.Canonical, nil)
			for cid, ok := range v.Valid {
				if g[cid] != ok {
					t.Fatalf("grade of %s = %v, verdict said %v", cid, g[cid], ok)
				}
			}
		})
	}
	late := []Copy{cp("a", "c1", "x", false), cp("b", "c2", "x", false), cp("c", "c3", "lie", false), cp("d", "c4", "x", false), cp("e", "c5", "", true)}
	want := map[string]bool{"a": true, "b": true, "c": false, "d": true, "e": false}
	g := Grade(late, "a", bytes.Equal)
	for cid, ok := range want {
		if g[cid] != ok {
			t.Fatalf("late grade of %s = %v, want %v", cid, g[cid], ok)
		}
	}
	if Grade(late, "zz", nil) != nil {
		t.Fatal("an unknown canonical graded results")
	}
}

// TestExternalEqual: a project's validator program decides agreement by
// its exit code; one that cannot run agrees with nothing.
func TestExternalEqual(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "first-line")
	script := "#!/bin/sh\n[ \"$(head -n1 \"$1\")\" = \"$(head -n1 \"$2\")\" ]\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	eq := ExternalEqual(prog)
	if !eq([]byte("3.14\nrun on host a\n"), []byte("3.14\nrun on host b\n")) {
		t.Fatal("same first line: want agreement")
	}
	if eq([]byte("3.14\n"), []byte("2.71\n")) {
		t.Fatal("different first line: want disagreement")
	}
	if ExternalEqual(filepath.Join(t.TempDir(), "missing"))([]byte("x"), []byte("x")) {
		t.Fatal("a validator that cannot run agreed")
	}
	v := Validate([]Copy{{CID: "a", ClientKey: []byte("c1"), Output: []byte("1\nx")}, {CID: "b", ClientKey: []byte("c2"), Output: []byte("1\ny")}}, 2, 2, eq)
	if v.Status != UnitValid {
		t.Fatalf("validator rule not used: %+v", v)
	}
}

// TestOneCreditPerClientPerUnit: a client that returned two copies of a
// unit earns credit for its first only; the later copy is flagged as a
// duplicate and graded without credit, in the verdict and when graded late.
func TestOneCreditPerClientPerUnit(t *testing.T) {
	cp := func(cid, client, out string) Copy {
		return Copy{CID: cid, ClientKey: []byte(client), Output: []byte(out)}
	}
	for _, tc := range []struct {
		name    string
		results []Copy
		issued  int
		status  string
		valid   map[string]bool
		dups    []string
	}{
		{"two copies of one client and one other", []Copy{cp("a", "greedy", "x"), cp("b", "greedy", "x"), cp("c", "c2", "x")}, 3,
			UnitValid, map[string]bool{"a": true, "b": false, "c": true}, []string{"b"}},
		{"the duplicate agrees, the first did not", []Copy{cp("a", "greedy", "lie"), cp("b", "c2", "x"), cp("c", "greedy", "x"), cp("d", "c3", "x")}, 4,
			UnitValid, map[string]bool{"a": false, "b": true, "c": false, "d": true}, []string{"c"}},
		{"two copies of one client alone are no quorum", []Copy{cp("a", "greedy", "x"), cp("b", "greedy", "x")}, 3,
			UnitOpen, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Validate(tc.results, tc.issued, 2, nil)
			if v.Status != tc.status {
				t.Fatalf("verdict %+v, want %s", v, tc.status)
			}
			if tc.status != UnitValid {
				return
			}
			for cid, ok := range tc.valid {
				if v.Valid[cid] != ok {
					t.Errorf("credit of %s = %v, want %v", cid, v.Valid[cid], ok)
				}
			}
			if len(v.Duplicate) != len(tc.dups) {
				t.Errorf("duplicates %v, want %v", v.Duplicate, tc.dups)
			}
			for _, cid := range tc.dups {
				if !v.Duplicate[cid] {
					t.Errorf("copy %s not flagged as a duplicate: %v", cid, v.Duplicate)
				}
			}
			g := Grade(tc.results, v.Canonical, nil)
			for cid, ok := range tc.valid {
				if g[cid] != ok {
					t.Errorf("late grade of %s = %v, want %v", cid, g[cid], ok)
				}
			}
		})
	}
}
