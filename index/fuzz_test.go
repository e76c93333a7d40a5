package index

import (
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; what parses has a canonical form that
// parses back to itself, and matching it against keyword sets drawn from
// its own terms does not panic and does not depend on the text's form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"LHC", "LHC AND mem:<128MB AND NOT bw:modem", "a OR b AND c", "(a OR b) c",
		"NOT NOT a", "((a))", "a AND", ")(", "", "\xff", "a\x00b", "LHC:finished",
		"(LHC AND a) OR (LHC AND b)", strings.Repeat("(", 17) + "a" + strings.Repeat(")", 17),
		strings.Repeat("x OR y AND (", 8) + "z" + strings.Repeat(")", 8),
		strings.Repeat("abcdefghijklmno ", 64),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("Parse(%q): error %v is not ErrBadQuery", s, err)
			}
			return
		}
		canon := q.String()
		q2, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) ok as %q, which does not re-parse: %v", s, canon, err)
		}
		if q2.String() != canon {
			t.Fatalf("canonical %q re-parses as %q", canon, q2.String())
		}
		// The query's own terms, plus one it cannot mention.
		var terms []string
		for _, tok := range tokenize(canon) {
			if tok != "(" && tok != ")" && tok != "AND" && tok != "OR" && tok != "NOT" && !slices.Contains(terms, tok) {
				terms = append(terms, tok)
			}
		}
		terms = append(terms, "\x00never")
		h := fnv.New64a()
		h.Write([]byte(s))
		rng := newRNG(h.Sum64())
		req := q.Required()
		for range 32 {
			var set []string
			for _, k := range terms {
				if rng.IntN(2) == 0 {
					set = append(set, k)
				}
			}
			slices.Sort(set)
			m := q.Match(set)
			if m != q2.Match(set) {
				t.Fatalf("%q and its canonical form disagree on %q", s, set)
			}
			if m {
				for _, r := range req {
					if _, ok := slices.BinarySearch(set, r); !ok {
						t.Fatalf("%q matches %q, which lacks required %q", s, set, r)
					}
				}
			}
		}
		if _, err := q.Primary(); err != nil && !errors.Is(err, ErrBadQuery) {
			t.Fatalf("Primary: %v", err)
		}
	})
}
