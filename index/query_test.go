package index

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// kws turns a space-separated list into sorted keywords, as Match wants.
func kws(s string) []string {
	out := strings.Fields(s)
	slices.Sort(out)
	return out
}

func TestParseValid(t *testing.T) {
	cases := []struct {
		in, canon string
		yes, no   []string // keyword sets (space-separated) that must / must not match
	}{
		{"LHC", "LHC", []string{"LHC", "LHC a b"}, []string{"", "lhc", "a", "LHC:finished"}},
		{"a AND b", "(a AND b)", []string{"a b", "a b c"}, []string{"a", "b", ""}},
		{"a b", "(a AND b)", []string{"a b"}, []string{"a", "b"}},
		{"a OR b", "(a OR b)", []string{"a", "b", "a b"}, []string{"", "c"}},
		{"NOT a", "NOT a", []string{"", "b"}, []string{"a", "a b"}},
		{"NOT NOT a", "NOT NOT a", []string{"a"}, []string{"", "b"}},
		{"a AND b AND c", "(a AND b AND c)", []string{"a b c"}, []string{"a b", "b c", "a c"}},
		{"a b c", "(a AND b AND c)", []string{"a b c"}, []string{"a b"}},
		{"a OR b OR c", "(a OR b OR c)", []string{"a", "b", "c"}, []string{"", "d"}},
		// Precedence NOT > AND > OR.
		{"a OR b AND c", "(a OR (b AND c))", []string{"a", "b c"}, []string{"b", "c", ""}},
		{"a AND b OR c", "((a AND b) OR c)", []string{"a b", "c"}, []string{"a", "b", "a d"}},
		{"NOT a AND b", "(NOT a AND b)", []string{"b"}, []string{"a b", "", "a"}},
		{"NOT a OR b", "(NOT a OR b)", []string{"", "b", "a b"}, []string{"a"}},
		{"a b OR c d", "((a AND b) OR (c AND d))", []string{"a b", "c d"}, []string{"a c", "b d"}},
		{"a OR NOT b c", "(a OR (NOT b AND c))", []string{"a", "c", "a b"}, []string{"b c", "", "b"}},
		// Parentheses.
		{"(a OR b) AND c", "((a OR b) AND c)", []string{"a c", "b c"}, []string{"a b", "c"}},
		{"(a OR b) c", "((a OR b) AND c)", []string{"a c"}, []string{"a b"}},
		{"NOT (a OR b)", "NOT (a OR b)", []string{"", "c"}, []string{"a", "b"}},
		{"NOT (a AND b)", "NOT (a AND b)", []string{"a", "b", ""}, []string{"a b"}},
		{"((a))", "a", []string{"a"}, []string{""}},
		{"(a AND (b OR (c AND NOT (d OR e))))", "(a AND (b OR (c AND NOT (d OR e))))",
			[]string{"a b", "a b d", "a c", "a c f"}, []string{"a c d", "a c e", "a", "b c"}},
		{"(a AND b) AND c", "((a AND b) AND c)", []string{"a b c"}, []string{"a b"}},
		{"(a)(b)", "(a AND b)", []string{"a b"}, []string{"a"}},
		{"a(b OR c)", "(a AND (b OR c))", []string{"a b", "a c"}, []string{"a", "b c"}},
		{" \t a \n AND\r\nb ", "(a AND b)", []string{"a b"}, []string{"a"}},
		// Keywords with punctuation, case sensitivity.
		{"mem:<128MB", "mem:<128MB", []string{"mem:<128MB"}, []string{"mem:<128mb", "mem"}},
		{"LHC:finished AND NOT bw:modem", "(LHC:finished AND NOT bw:modem)",
			[]string{"LHC:finished", "LHC:finished mem:<128MB"}, []string{"LHC:finished bw:modem", "LHC"}},
		{"LHC AND mem:<128MB AND NOT bw:modem", "(LHC AND mem:<128MB AND NOT bw:modem)",
			[]string{"LHC mem:<128MB"}, []string{"LHC", "LHC mem:<128MB bw:modem"}},
		{"größe:1 OR 漢字", "(größe:1 OR 漢字)", []string{"größe:1", "漢字"}, []string{"grosse:1"}},
		{"and OR or", "(and OR or)", []string{"and", "or"}, []string{"AND"}},
		{"ANDx NOTy", "(ANDx AND NOTy)", []string{"ANDx NOTy"}, []string{"ANDx"}},
		{strings.Repeat("k", 128), strings.Repeat("k", 128), []string{strings.Repeat("k", 128)}, []string{"k"}},
	}
	for _, c := range cases {
		q, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := q.String(); got != c.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got, c.canon)
		}
		for _, s := range c.yes {
			if !q.Match(kws(s)) {
				t.Errorf("%q does not match {%s}", c.in, s)
			}
		}
		for _, s := range c.no {
			if q.Match(kws(s)) {
				t.Errorf("%q matches {%s}", c.in, s)
			}
		}
	}
}

func TestParseBounds(t *testing.T) {
	nest := func(d int) string { return strings.Repeat("(", d) + "a" + strings.Repeat(")", d) }
	terms := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = "k" + string(rune('a'+i%26))
		}
		return strings.Join(parts, " OR ")
	}
	ok := []string{
		"a" + strings.Repeat(" ", MaxQueryLen-1), // exactly MaxQueryLen bytes
		terms(MaxQueryTerms),
		nest(MaxQueryDepth),
		strings.Repeat("NOT ", MaxQueryDepth) + "a",
	}
	for _, s := range ok {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%.40q…): %v", s, err)
		}
	}
	bad := []string{
		"a" + strings.Repeat(" ", MaxQueryLen),
		terms(MaxQueryTerms + 1),
		nest(MaxQueryDepth + 1),
		strings.Repeat("NOT ", 2*MaxQueryDepth) + "a",
		strings.Repeat("NOT (", MaxQueryDepth) + "a" + strings.Repeat(")", MaxQueryDepth),
		strings.Repeat("(a AND ", MaxQueryDepth+1) + "a" + strings.Repeat(")", MaxQueryDepth+1),
	}
	for _, s := range bad {
		if _, err := Parse(s); !errors.Is(err, ErrBadQuery) {
			t.Errorf("Parse(%.40q…) = %v, want ErrBadQuery", s, err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, s := range []string{
		"", " ", "\t\n", "()", "(", ")", "(a", "a)", "((a)", "(a))", ")a(", "a ) b",
		"a AND", "a OR", "a AND OR b", "a OR AND b", "AND a", "OR a", "AND", "OR", "NOT",
		"a NOT", "NOT AND a", "a (", "a ()", "(OR)", "NOT )",
		"a\x01b", "a\x7fb", "\x00", "a\u200bb", "a\u00a0b", "a\vb", "a\fb",
		"\xff", "a\xc3", "ok AND \xfe\xff",
		strings.Repeat("k", 129),
	} {
		q, err := Parse(s)
		if !errors.Is(err, ErrBadQuery) {
			t.Errorf("Parse(%q) = %v, %v; want ErrBadQuery", s, q, err)
		}
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse(\"a AND\") did not panic")
		}
	}()
	MustParse("a AND")
}

func TestRequiredPrimary(t *testing.T) {
	cases := []struct {
		in      string
		req     []string
		primary string // "" : Primary must fail
	}{
		{"LHC", []string{"LHC"}, "LHC"},
		{"LHC AND (a OR b)", []string{"LHC"}, "LHC"},
		{"(LHC AND a) OR (LHC AND b)", []string{"LHC"}, "LHC"},
		{"(a AND LHC) OR (LHC AND b)", []string{"LHC"}, "LHC"},
		{"(a AND LHC AND b) OR (b AND LHC)", []string{"LHC", "b"}, "LHC"},
		{"a OR b", nil, ""},
		{"NOT a", nil, ""},
		{"NOT a AND b", []string{"b"}, "b"},
		{"a b c a", []string{"a", "b", "c"}, "a"},
		{"c AND (b OR a) AND a", []string{"c", "a"}, "c"},
		{"(a b) OR (b a)", []string{"a", "b"}, "a"},
		{"a OR a", []string{"a"}, "a"},
		{"NOT NOT a", nil, ""},
		{"(a OR b) AND (b OR a)", nil, ""},
		{"x AND NOT (x AND y)", []string{"x"}, "x"},
	}
	for _, c := range cases {
		q := MustParse(c.in)
		if got := q.Required(); !slices.Equal(got, c.req) {
			t.Errorf("%q.Required() = %q, want %q", c.in, got, c.req)
		}
		p, err := q.Primary()
		if c.primary == "" {
			if !errors.Is(err, ErrBadQuery) {
				t.Errorf("%q.Primary() = %q, %v; want ErrBadQuery", c.in, p, err)
			}
			continue
		}
		if err != nil || p != c.primary {
			t.Errorf("%q.Primary() = %q, %v; want %q", c.in, p, err, c.primary)
		}
	}
}

// --- Random query ASTs -------------------------------------------------

var alphabet = []string{"LHC", "a", "b", "mem:<128MB", "LHC:finished", "bw:modem"}

type gnode struct {
	op   op
	kw   string
	kids []*gnode
}

func genQuery(rng *rand.Rand, alpha []string, depth int) *gnode {
	if depth <= 0 || rng.IntN(3) == 0 {
		return &gnode{op: opTerm, kw: alpha[rng.IntN(len(alpha))]}
	}
	switch rng.IntN(5) {
	case 0:
		return &gnode{op: opNot, kids: []*gnode{genQuery(rng, alpha, depth-1)}}
	case 1, 2:
		n := &gnode{op: opAnd}
		for range 2 + rng.IntN(3) {
			n.kids = append(n.kids, genQuery(rng, alpha, depth-1))
		}
		return n
	default:
		n := &gnode{op: opOr}
		for range 2 + rng.IntN(3) {
			n.kids = append(n.kids, genQuery(rng, alpha, depth-1))
		}
		return n
	}
}

// canon prints g in the canonical form String must produce.
func (g *gnode) canon() string {
	switch g.op {
	case opTerm:
		return g.kw
	case opNot:
		return "NOT " + g.kids[0].canon()
	}
	sep := " AND "
	if g.op == opOr {
		sep = " OR "
	}
	parts := make([]string, len(g.kids))
	for i, k := range g.kids {
		parts[i] = k.canon()
	}
	return "(" + strings.Join(parts, sep) + ")"
}

// loose prints g in some other form that parses to the same tree:
// parentheses dropped where precedence allows, extra ones added, implicit
// AND, assorted whitespace.
func (g *gnode) loose(rng *rand.Rand, parent op, top bool) string {
	ws := func() string { return []string{" ", "  ", "\t", "\n", " \r\n "}[rng.IntN(5)] }
	var s string
	needParens := false
	switch g.op {
	case opTerm:
		s = g.kw
	case opNot:
		s = "NOT" + ws() + g.kids[0].loose(rng, opNot, false)
	default:
		sep := ws() + "OR" + ws()
		if g.op == opAnd {
			sep = ws() + "AND" + ws()
		}
		for i, k := range g.kids {
			if i > 0 {
				if g.op == opAnd && rng.IntN(2) == 0 {
					s += ws()
				} else {
					s += sep
				}
			}
			s += k.loose(rng, g.op, false)
		}
		// Parentheses are needed unless this is the top, or an AND
		// directly under an OR.
		needParens = !top && !(g.op == opAnd && parent == opOr)
	}
	if needParens || rng.IntN(8) == 0 {
		s = "(" + ws() + s + ws() + ")"
	}
	return s
}

// eval is the brute-force evaluator.
func (g *gnode) eval(set map[string]bool) bool {
	switch g.op {
	case opTerm:
		return set[g.kw]
	case opNot:
		return !g.kids[0].eval(set)
	case opAnd:
		for _, k := range g.kids {
			if !k.eval(set) {
				return false
			}
		}
		return true
	}
	for _, k := range g.kids {
		if k.eval(set) {
			return true
		}
	}
	return false
}

func (g *gnode) terms() int {
	if g.op == opTerm {
		return 1
	}
	n := 0
	for _, k := range g.kids {
		n += k.terms()
	}
	return n
}

func (g *gnode) hasNot() bool {
	if g.op == opNot {
		return true
	}
	return slices.ContainsFunc(g.kids, (*gnode).hasNot)
}

// subsets lists every subset of alpha as a sorted slice and as a set.
func subsets(alpha []string) ([][]string, []map[string]bool) {
	var lists [][]string
	var sets []map[string]bool
	for mask := range 1 << len(alpha) {
		var l []string
		m := map[string]bool{}
		for i, k := range alpha {
			if mask&(1<<i) != 0 {
				l = append(l, k)
				m[k] = true
			}
		}
		slices.Sort(l)
		lists, sets = append(lists, l), append(sets, m)
	}
	return lists, sets
}

func TestQueryProperties(t *testing.T) {
	rng := newRNG(1)
	lists, sets := subsets(alphabet)
	for iter := range 3000 {
		alpha := alphabet[:1+rng.IntN(len(alphabet))]
		g := genQuery(rng, alpha, 1+rng.IntN(5))
		for g.terms() > 24 { // keep loose text well inside MaxQueryLen
			g = genQuery(rng, alpha, 1+rng.IntN(5))
		}
		want := g.canon()

		// (a) canonical round trip, from canonical and from loose text.
		q, err := Parse(want)
		if err != nil {
			t.Fatalf("iter %d: Parse(%q): %v", iter, want, err)
		}
		if q.String() != want {
			t.Fatalf("iter %d: Parse(%q).String() = %q", iter, want, q.String())
		}
		loose := g.loose(rng, opTerm, true)
		ql, err := Parse(loose)
		if err != nil {
			t.Fatalf("iter %d: Parse(%q): %v", iter, loose, err)
		}
		if ql.String() != want {
			t.Fatalf("iter %d: Parse(%q).String() = %q, want %q", iter, loose, ql.String(), want)
		}
		if again := MustParse(q.String()).String(); again != want {
			t.Fatalf("iter %d: round trip %q -> %q", iter, want, again)
		}

		// (b) Match agrees with brute force on every subset; (c) Required
		// keywords are in every accepted set.
		req := q.Required()
		if p, err := q.Primary(); (err == nil) != (len(req) > 0) || (err == nil && p != req[0]) {
			t.Fatalf("iter %d: %q: Primary() = %q, %v with Required %q", iter, want, p, err, req)
		}
		for i, l := range lists {
			got, exp := q.Match(l), g.eval(sets[i])
			if got != exp {
				t.Fatalf("iter %d: %q.Match(%q) = %v, brute force %v", iter, want, l, got, exp)
			}
			if ql.Match(l) != exp {
				t.Fatalf("iter %d: %q.Match(%q) = %v, brute force %v", iter, loose, l, !exp, exp)
			}
			if got {
				for _, r := range req {
					if !sets[i][r] {
						t.Fatalf("iter %d: %q matches %q, which lacks required %q", iter, want, l, r)
					}
				}
			}
		}
		// Without NOT the query is monotone and Required is exact: a
		// keyword is required iff dropping it alone from the full
		// alphabet makes the query fail.
		if !g.hasNot() {
			var sem []string
			for _, k := range alphabet {
				all := map[string]bool{}
				for _, a := range alphabet {
					all[a] = a != k
				}
				if !g.eval(all) {
					sem = append(sem, k)
				}
			}
			gotReq := slices.Sorted(slices.Values(req))
			slices.Sort(sem)
			if !slices.Equal(gotReq, sem) {
				t.Fatalf("iter %d: %q.Required() = %q, semantically %q", iter, want, req, sem)
			}
		}
	}
}

// A query within the bounds as written can have a canonical form that is
// not (implicit ANDs and precedence add text and parentheses). Parse must
// refuse it rather than accept a query whose String() does not re-parse.
func TestCanonicalFormKeepsBounds(t *testing.T) {
	long := strings.TrimSpace(strings.Repeat("abcdefghijklmno ", MaxQueryTerms)) // 1023 bytes, 64 terms
	deep := strings.Repeat("x OR y AND (", MaxQueryDepth) + "z" + strings.Repeat(")", MaxQueryDepth)
	for _, s := range []string{long, deep} {
		q, err := Parse(s)
		if err == nil {
			_, err2 := Parse(q.String())
			t.Errorf("Parse(%.30q…) accepted, canonical form re-parses with %v", s, err2)
		} else if !errors.Is(err, ErrBadQuery) {
			t.Errorf("Parse(%.30q…) = %v, want ErrBadQuery", s, err)
		}
	}
	// Just inside: the canonical form is exactly at the bounds.
	fit := strings.Repeat("(x OR ", MaxQueryDepth-1) + "(y AND z)" + strings.Repeat(")", MaxQueryDepth-1)
	if q, err := Parse(fit); err != nil || q.String() != fit {
		t.Errorf("Parse(%q) = %v, %v", fit, q, err)
	}
}
