package job

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
)

// TestTreeHasherIsRFC6962: the batches' tree hasher gives the library's
// RFC 6962 hashes for leaves and nodes of every length around its
// buffers' sizes. Control: a node hash with the leaf prefix differs.
func TestTreeHasherIsRFC6962(t *testing.T) {
	rng := rand.New(rand.NewPCG(6962, 1))
	ref := rfc6962.DefaultHasher
	if !bytes.Equal(treeHasher.EmptyRoot(), ref.EmptyRoot()) || treeHasher.Size() != ref.Size() {
		t.Fatal("empty root or size differs")
	}
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, n := range []int{0, 1, 31, 32, 33, 255, 256, 257, 600, 4096} {
		leaf := bytesOf(n)
		if !bytes.Equal(treeHasher.HashLeaf(leaf), ref.HashLeaf(leaf)) {
			t.Errorf("leaf of %d bytes: hashes differ", n)
		}
		l, r := bytesOf(n/2), bytesOf(n-n/2)
		if !bytes.Equal(treeHasher.HashChildren(l, r), ref.HashChildren(l, r)) {
			t.Errorf("children of %d and %d bytes: hashes differ", len(l), len(r))
		}
	}
	l, r := bytesOf(32), bytesOf(32)
	if bytes.Equal(treeHasher.HashChildren(l, r), ref.HashLeaf(append(l, r...))) {
		t.Fatal("control: a node hashed as a leaf")
	}
}
