package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/up-pool/up/wire"
)

// TestQuerySkipBounds: a skipping query names at most MaxQuerySkips jobs
// of bounded keys, does not page, and its largest valid form fits
// MaxQuerySkipFrame.
func TestQuerySkipBounds(t *testing.T) {
	q := wire.IndexQueryRequest{Query: "lhc", Keyword: "lhc", N: 1}
	keys := func(n, size int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = bytes.Repeat([]byte{byte(i)}, size)
		}
		return out
	}
	paging := q
	paging.Page = true
	cases := []struct {
		name string
		req  wire.IndexQuerySkipRequest
		ok   bool
	}{
		{"none", wire.IndexQuerySkipRequest{Query: q}, true},
		{"max skipped", wire.IndexQuerySkipRequest{Query: q, Skip: keys(wire.MaxQuerySkips, 36)}, true},
		{"max together", wire.IndexQuerySkipRequest{Query: q, Skip: keys(200, 36), Decline: keys(wire.MaxQuerySkips-200, 36)}, true},
		{"over max", wire.IndexQuerySkipRequest{Query: q, Skip: keys(200, 36), Decline: keys(wire.MaxQuerySkips-199, 36)}, false},
		{"empty key", wire.IndexQuerySkipRequest{Query: q, Decline: keys(1, 0)}, false},
		{"key over max", wire.IndexQuerySkipRequest{Query: q, Skip: keys(1, wire.MaxJobKeyLen+1)}, false},
		{"paging", wire.IndexQuerySkipRequest{Query: paging, Skip: keys(1, 36)}, false},
		{"a reason per decline", wire.IndexQuerySkipRequest{Query: q, Decline: keys(2, 36), Reasons: []wire.SkipReason{wire.SkipNotAllowed, wire.SkipSameUnit}}, true},
		{"reasons short", wire.IndexQuerySkipRequest{Query: q, Decline: keys(2, 36), Reasons: []wire.SkipReason{wire.SkipNotAllowed}}, false},
		{"unknown reason", wire.IndexQuerySkipRequest{Query: q, Decline: keys(1, 36), Reasons: []wire.SkipReason{200}}, false},
		{"bad query", wire.IndexQuerySkipRequest{Query: wire.IndexQueryRequest{Keyword: "lhc", N: 1}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := wire.Marshal(&c.req)
			if err != nil {
				t.Fatal(err)
			}
			err = wire.Decode(b, &wire.IndexQuerySkipRequest{})
			if c.ok != (err == nil) || (!c.ok && !errors.Is(err, wire.ErrMalformed)) {
				t.Fatalf("Decode = %v, want ok=%v", err, c.ok)
			}
		})
	}
	largest := wire.IndexQuerySkipRequest{Query: wire.IndexQueryRequest{Query: string(bytes.Repeat([]byte("k"), wire.MaxQueryBytes)),
		Keyword: "lhc", N: wire.MaxIndexHits}, Skip: keys(wire.MaxQuerySkips, wire.MaxJobKeyLen)}
	if b, _ := wire.Marshal(&largest); len(b) > wire.MaxQuerySkipFrame {
		t.Fatalf("largest skipping query %d bytes > MaxQuerySkipFrame %d", len(b), wire.MaxQuerySkipFrame)
	}
}
