package job

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/up-pool/up/codec"
)

// A project collects the jobs of one harvest pass under one signature:
// the collect statements of the batch are the leaves of an RFC 6962
// Merkle tree (SHA-256, transparency-dev/merkle), the project signs
// collectBatchDomain ‖ size ‖ root once, and each job's proof carries
// that signature (Proof.Sig) and the job's inclusion path (Proof.Path, a
// CollectPath). A node checks the path with a few hashes and the root's
// signature once per batch (the caller caches it by message).

const collectBatchDomain = "up/collected-batch/v1\x00"

// Bounds of a collect batch.
const (
	// MaxCollectBatch is the most jobs one batch signature covers.
	MaxCollectBatch = 1 << 16
	// maxPathHashes bounds a path: ⌈log2 MaxCollectBatch⌉ hashes.
	maxPathHashes = 16
	// MaxPathBytes bounds an encoded CollectPath.
	MaxPathBytes = 16 + maxPathHashes*(rfc6962Size+2) + 8
	rfc6962Size  = 32
)

var treeHasher = rfc6962.New(crypto.SHA256)

// CollectPath is a job's place in a collect batch: its leaf's Index of
// Size leaves, and the inclusion proof's Hashes, leaf to root.
type CollectPath struct {
	_      struct{} `cbor:",toarray"`
	Index  uint64
	Size   uint64
	Hashes [][]byte
}

// collectLeaf is the leaf hash of job key collected at.
func collectLeaf(key []byte, at int64) []byte {
	return treeHasher.HashLeaf(CollectStatement(key, at))
}

// collectBatchMessage is what the project signs for a batch of size
// leaves whose tree has root.
func collectBatchMessage(size uint64, root []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte(collectBatchDomain), size)
	return append(b, root...)
}

// SignCollectedBatch returns the proofs of State{Phase: Collected, At:
// at} for each job of keys, under one signature by the project's key: a
// single job gets SignCollected's plain proof, two or more the batch's
// signature and each its inclusion path.
func SignCollectedBatch(keys [][]byte, at int64, projectKey ed25519.PrivateKey) ([]Proof, error) {
	switch n := len(keys); {
	case n == 0:
		return nil, nil
	case n == 1:
		return []Proof{SignCollected(keys[0], at, projectKey)}, nil
	case n > MaxCollectBatch:
		return nil, fmt.Errorf("collect batch of %d jobs, at most %d", n, MaxCollectBatch)
	}
	size := uint64(len(keys))
	nodes := map[compact.NodeID][]byte{}
	visit := func(id compact.NodeID, h []byte) { nodes[id] = h }
	rf := &compact.RangeFactory{Hash: treeHasher.HashChildren}
	tree := rf.NewEmptyRange(0)
	for _, k := range keys {
		if err := tree.Append(collectLeaf(k, at), visit); err != nil {
			return nil, fmt.Errorf("collect batch tree: %w", err)
		}
	}
	root, err := tree.GetRootHash(visit)
	if err != nil {
		return nil, fmt.Errorf("collect batch root: %w", err)
	}
	sig := ed25519.Sign(projectKey, collectBatchMessage(size, root))
	out := make([]Proof, len(keys))
	for i := range keys {
		path, err := inclusionPath(nodes, uint64(i), size)
		if err != nil {
			return nil, err
		}
		b, err := codec.Marshal(&CollectPath{Index: uint64(i), Size: size, Hashes: path})
		if err != nil {
			return nil, err
		}
		out[i] = Proof{Sig: sig, Path: b}
	}
	return out, nil
}

// inclusionPath is leaf index's inclusion proof in a tree of size
// leaves whose node hashes are nodes.
func inclusionPath(nodes map[compact.NodeID][]byte, index, size uint64) ([][]byte, error) {
	want, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(want.IDs))
	for i, id := range want.IDs {
		h, ok := nodes[id]
		if !ok {
			return nil, fmt.Errorf("collect batch: node %+v of leaf %d's path not in the tree", id, index)
		}
		hashes[i] = h
	}
	return want.Rehash(hashes, treeHasher.HashChildren)
}

// DecodeCollectPath parses a proof's path within its bounds, in its one
// canonical encoding.
func DecodeCollectPath(b []byte) (CollectPath, error) {
	var c CollectPath
	if len(b) == 0 || len(b) > MaxPathBytes {
		return c, fmt.Errorf("%w: collect path of %d bytes", ErrMalformed, len(b))
	}
	if err := codec.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: collect path: %v", ErrMalformed, err)
	}
	if c.Size < 2 || c.Size > MaxCollectBatch || c.Index >= c.Size || len(c.Hashes) > maxPathHashes {
		return c, fmt.Errorf("%w: collect path of leaf %d of %d with %d hashes", ErrMalformed, c.Index, c.Size, len(c.Hashes))
	}
	for _, h := range c.Hashes {
		if len(h) != rfc6962Size {
			return c, fmt.Errorf("%w: collect path hash of %d bytes", ErrMalformed, len(h))
		}
	}
	if re, err := codec.Marshal(&c); err != nil || !bytes.Equal(re, b) {
		return c, fmt.Errorf("%w: collect path not canonically encoded", ErrMalformed)
	}
	return c, nil
}

// CollectedMessage checks the shape of p as the proof of the collected
// state st of job key and returns the message p.Sig must be the project's
// signature of: the job's CollectStatement for a plain proof, the batch's
// root message — the path followed from the job's leaf — for a batch
// proof. The caller verifies the signature (caching a batch's, which
// recurs for every job of the batch).
func CollectedMessage(key []byte, st State, p Proof) ([]byte, error) {
	if st.Phase != Collected {
		return nil, fmt.Errorf("%w: %s state checked as collected", ErrMalformed, st.Phase)
	}
	if len(p.Sig) == 0 {
		return nil, fmt.Errorf("%w: collected at %d without the project's signature", ErrNoProof, st.At)
	}
	if len(p.Path) == 0 {
		return CollectStatement(key, st.At), nil
	}
	c, err := DecodeCollectPath(p.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: collected at %d: %w", ErrForgedProof, st.At, err)
	}
	root, err := proof.RootFromInclusionProof(treeHasher, c.Index, c.Size, collectLeaf(key, st.At), c.Hashes)
	if err != nil {
		return nil, fmt.Errorf("%w: collected at %d: path: %v", ErrForgedProof, st.At, err)
	}
	return collectBatchMessage(c.Size, root), nil
}
