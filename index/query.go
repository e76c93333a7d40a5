package index

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/up-pool/up/job"
)

// Query bounds.
const (
	MaxQueryLen   = 1024 // bytes
	MaxQueryTerms = 64
	MaxQueryDepth = 16
)

// ErrBadQuery reports a query that does not parse or breaks a bound.
var ErrBadQuery = errors.New("bad query")

type op uint8

const (
	opTerm op = iota
	opAnd
	opOr
	opNot
)

// Query is a parsed boolean expression over keywords: terms joined by AND,
// OR and NOT (in falling precedence NOT, AND, OR), grouped by parentheses;
// adjacent terms are joined by AND. Keywords are case-sensitive.
type Query struct {
	root *node
	text string
}

type node struct {
	op   op
	kw   string
	kids []*node
}

// Parse parses a query such as `LHC AND mem:<128MB AND NOT bw:modem`.
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryLen {
		return nil, fmt.Errorf("%w: %d bytes (max %d)", ErrBadQuery, len(s), MaxQueryLen)
	}
	toks := tokenize(s)
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadQuery)
	}
	p := &parser{toks: toks}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("%w: unexpected %q", ErrBadQuery, p.toks[p.i])
	}
	if p.terms > MaxQueryTerms {
		return nil, fmt.Errorf("%w: %d terms (max %d)", ErrBadQuery, p.terms, MaxQueryTerms)
	}
	q := &Query{root: root}
	q.text = q.root.String()
	if q.text != s {
		// The canonical form, the one that travels, must keep the bounds
		// too: it can be longer and more deeply nested than s.
		if _, err := Parse(q.text); err != nil {
			return nil, fmt.Errorf("canonical form: %w", err)
		}
	}
	return q, nil
}

// MustParse parses a query known to be valid, panicking otherwise.
func MustParse(s string) *Query {
	q, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return q
}

func tokenize(s string) []string {
	var out []string
	cur := strings.Builder{}
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	// Bytes, not runes: the delimiters are ASCII, and ranging over runes
	// would turn invalid UTF-8 into U+FFFD, which ValidateKeyword accepts.
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', ')':
			flush()
			out = append(out, string(c))
		case ' ', '\t', '\n', '\r':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

type parser struct {
	toks  []string
	i     int
	terms int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *parser) or(depth int) (*node, error) {
	if depth > MaxQueryDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrBadQuery, MaxQueryDepth)
	}
	first, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	kids := []*node{first}
	for p.peek() == "OR" {
		p.i++
		n, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &node{op: opOr, kids: kids}, nil
}

func (p *parser) and(depth int) (*node, error) {
	first, err := p.not(depth)
	if err != nil {
		return nil, err
	}
	kids := []*node{first}
	for {
		t := p.peek()
		if t == "AND" {
			p.i++
		} else if t == "" || t == "OR" || t == ")" {
			break
		}
		n, err := p.not(depth)
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &node{op: opAnd, kids: kids}, nil
}

func (p *parser) not(depth int) (*node, error) {
	if p.peek() == "NOT" {
		p.i++
		if depth > MaxQueryDepth {
			return nil, fmt.Errorf("%w: nested deeper than %d", ErrBadQuery, MaxQueryDepth)
		}
		kid, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, kids: []*node{kid}}, nil
	}
	return p.primary(depth)
}

func (p *parser) primary(depth int) (*node, error) {
	t := p.peek()
	switch t {
	case "":
		return nil, fmt.Errorf("%w: ends where a keyword is expected", ErrBadQuery)
	case "(":
		p.i++
		n, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("%w: missing )", ErrBadQuery)
		}
		p.i++
		return n, nil
	case ")", "AND", "OR":
		return nil, fmt.Errorf("%w: unexpected %q", ErrBadQuery, t)
	}
	if err := job.ValidateKeyword(t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	p.i++
	p.terms++
	return &node{op: opTerm, kw: t}, nil
}

// Match evaluates the query on a job's keywords, which must be sorted.
func (q *Query) Match(sortedKeywords []string) bool { return q.root.match(sortedKeywords) }

func (n *node) match(kw []string) bool {
	switch n.op {
	case opTerm:
		_, ok := slices.BinarySearch(kw, n.kw)
		return ok
	case opNot:
		return !n.kids[0].match(kw)
	case opAnd:
		for _, k := range n.kids {
			if !k.match(kw) {
				return false
			}
		}
		return true
	default:
		for _, k := range n.kids {
			if k.match(kw) {
				return true
			}
		}
		return false
	}
}

// Required lists, in query order, the keywords every match must have. The
// first is the query's primary keyword: the region to ask.
func (q *Query) Required() []string { return q.root.required() }

func (n *node) required() []string {
	switch n.op {
	case opTerm:
		return []string{n.kw}
	case opAnd:
		var out []string
		for _, k := range n.kids {
			for _, kw := range k.required() {
				if !slices.Contains(out, kw) {
					out = append(out, kw)
				}
			}
		}
		return out
	case opOr:
		out := n.kids[0].required()
		for _, k := range n.kids[1:] {
			other := k.required()
			out = slices.DeleteFunc(out, func(kw string) bool { return !slices.Contains(other, kw) })
		}
		return out
	}
	return nil
}

// Primary is the keyword whose region answers the query, or an error when
// no keyword is common to every match (such a query cannot be answered by
// one region: split it at its top-level OR).
func (q *Query) Primary() (string, error) {
	req := q.Required()
	if len(req) == 0 {
		return "", fmt.Errorf("%w: %q has no keyword that every match must have", ErrBadQuery, q.text)
	}
	return req[0], nil
}

// String is the query in canonical form, fully parenthesised.
func (q *Query) String() string { return q.text }

func (n *node) String() string {
	switch n.op {
	case opTerm:
		return n.kw
	case opNot:
		return "NOT " + n.kids[0].String()
	}
	sep := " AND "
	if n.op == opOr {
		sep = " OR "
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = k.String()
	}
	return "(" + strings.Join(parts, sep) + ")"
}
