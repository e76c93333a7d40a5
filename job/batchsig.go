package job

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/up-pool/up/codec"
)

// A project signs a batch of objects — the collect statements of a
// harvest pass, the specs and listings of a submission — under one
// signature: their payloads are the leaves of an RFC 6962 Merkle tree
// (SHA-256, transparency-dev/merkle), the project signs domain ‖ size ‖
// root once, and each object carries that signature and its inclusion
// path (a BatchPath). A verifier folds the path with a few hashes and
// verifies the root's signature once per batch (sigverify.Once).

const collectBatchDomain = "up/collected-batch/v1\x00"

// Bounds of a collect batch.
const (
	// MaxBatch is the most objects one batch signature covers.
	MaxBatch = 1 << 16
	// maxPathHashes bounds a path: ⌈log2 MaxBatch⌉ hashes.
	maxPathHashes = 16
	// MaxPathBytes bounds an encoded BatchPath.
	MaxPathBytes = 16 + maxPathHashes*(rfc6962Size+2) + 8
	rfc6962Size  = 32
)

// BatchPath is an object's place in a signed batch: its leaf's Index of
// Size leaves, and the inclusion proof's Hashes, leaf to root.
type BatchPath struct {
	_      struct{} `cbor:",toarray"`
	Index  uint64
	Size   uint64
	Hashes [][]byte
}

// batchMessage is what the project signs for a batch of size leaves
// whose tree has root, under domain.
func batchMessage(domain string, size uint64, root []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte(domain), size)
	return append(b, root...)
}

// SignCollectedBatch returns the proofs of State{Phase: Collected, At:
// at} for each job of keys, under one signature by the project's key: a
// single job gets SignCollected's plain proof, two or more the batch's
// signature and each its inclusion path.
func SignCollectedBatch(keys [][]byte, at int64, projectKey ed25519.PrivateKey) ([]Proof, error) {
	switch len(keys) {
	case 0:
		return nil, nil
	case 1:
		return []Proof{SignCollected(keys[0], at, projectKey)}, nil
	}
	payloads := make([][]byte, len(keys))
	for i, k := range keys {
		payloads[i] = CollectStatement(k, at)
	}
	sig, paths, err := signBatch(collectBatchDomain, payloads, projectKey)
	if err != nil {
		return nil, fmt.Errorf("collect batch: %w", err)
	}
	out := make([]Proof, len(keys))
	for i := range keys {
		out[i] = Proof{Sig: sig, Path: paths[i]}
	}
	return out, nil
}

// signBatch signs payloads (at least two, at most MaxBatch) under one
// signature of domain ‖ size ‖ root with key, and returns it with each
// payload's encoded BatchPath.
func signBatch(domain string, payloads [][]byte, key ed25519.PrivateKey) ([]byte, [][]byte, error) {
	return SignBatchWith(domain, payloads, signWith(key))
}

// signWith signs a message with key.
func signWith(key ed25519.PrivateKey) func(msg []byte) ([]byte, error) {
	return func(msg []byte) ([]byte, error) { return ed25519.Sign(key, msg), nil }
}

// SignBatchWith is signBatch for any signer: sign signs domain ‖ size ‖
// root once (a node's peer key, for its claim replies). Each payload's
// encoded BatchPath leads from its leaf to that root (BatchMessage).
func SignBatchWith(domain string, payloads [][]byte, sign func(msg []byte) ([]byte, error)) ([]byte, [][]byte, error) {
	sig, _, paths, err := signTree(domain, payloads, sign)
	return sig, paths, err
}

// signTree is SignBatchWith, returning the tree's root too.
func signTree(domain string, payloads [][]byte, sign func(msg []byte) ([]byte, error)) (sig, root []byte, paths [][]byte, err error) {
	if n := len(payloads); n < 2 || n > MaxBatch {
		return nil, nil, nil, fmt.Errorf("batch of %d objects, 2 to %d", n, MaxBatch)
	}
	size := uint64(len(payloads))
	nodes := map[compact.NodeID][]byte{}
	visit := func(id compact.NodeID, h []byte) { nodes[id] = h }
	rf := &compact.RangeFactory{Hash: treeHasher.HashChildren}
	tree := rf.NewEmptyRange(0)
	for _, p := range payloads {
		if err := tree.Append(treeHasher.HashLeaf(p), visit); err != nil {
			return nil, nil, nil, fmt.Errorf("batch tree: %w", err)
		}
	}
	root, err = tree.GetRootHash(visit)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("batch root: %w", err)
	}
	sig, err = sign(batchMessage(domain, size, root))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sign batch root: %w", err)
	}
	paths = make([][]byte, len(payloads))
	for i := range payloads {
		hashes, err := inclusionPath(nodes, uint64(i), size)
		if err != nil {
			return nil, nil, nil, err
		}
		paths[i] = encodeBatchPath(uint64(i), size, hashes)
	}
	return sig, root, paths, nil
}

// encodeBatchPath is the canonical encoding of BatchPath{index, size,
// hashes} (codec.Marshal's, written by hand: a batch encodes a path per
// object; TestEncodeBatchPathIsMarshal holds it to codec.Marshal).
func encodeBatchPath(index, size uint64, hashes [][]byte) []byte {
	n := 1 + 9 + 9 + 9
	for _, h := range hashes {
		n += len(h) + 9
	}
	b := append(make([]byte, 0, n), 0x83)
	b = codec.AppendHeadTo(b, 0, index)
	b = codec.AppendHeadTo(b, 0, size)
	if hashes == nil {
		return append(b, 0xf6)
	}
	b = codec.AppendHeadTo(b, 4, uint64(len(hashes)))
	for _, h := range hashes {
		b = codec.AppendBytes(b, h)
	}
	return b
}

// batchSigned is the message a batch's signature covers for the object
// whose payload and encoded path are given: domain ‖ size ‖ the root the
// path leads to from the payload's leaf. An error wraps ErrMalformed for
// a path out of its bounds, ErrBadSignature for one that leads nowhere.
func batchSigned(domain string, payload, path []byte) ([]byte, error) {
	c, err := DecodeBatchPath(path)
	if err != nil {
		return nil, err
	}
	root, err := proof.RootFromInclusionProof(treeHasher, c.Index, c.Size, treeHasher.HashLeaf(payload), c.Hashes)
	if err != nil {
		return nil, fmt.Errorf("%w: batch path: %v", ErrBadSignature, err)
	}
	return batchMessage(domain, c.Size, root), nil
}

// BatchMessage is the message a batch signature made by SignBatchWith
// under domain covers for the object whose payload and encoded path are
// given (batchSigned, exported). An error wraps ErrMalformed for a path
// out of its bounds, ErrBadSignature for one that leads nowhere.
func BatchMessage(domain string, payload, path []byte) ([]byte, error) {
	return batchSigned(domain, payload, path)
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

// DecodeBatchPath parses a proof's path within its bounds, in its one
// canonical encoding (core deterministic CBOR, what codec.Marshal gives:
// an array of the index, the size and the hashes, each head in its
// shortest form). It reads that one layout by hand — a path is decoded
// several times for every job of a batch, where a reflective decode was
// 2.4 % of up bench's CPU — and refuses every other encoding, as the
// reflective decode followed by a re-encoding check did;
// FuzzDecodeBatchPath holds it to that reference.
func DecodeBatchPath(b []byte) (BatchPath, error) {
	var c BatchPath
	if len(b) == 0 || len(b) > MaxPathBytes {
		return c, fmt.Errorf("%w: batch path of %d bytes", ErrMalformed, len(b))
	}
	if b[0] != 0x83 { // an array of 3
		return c, fmt.Errorf("%w: batch path is not an array of 3", ErrMalformed)
	}
	rest := b[1:]
	var n uint64
	var ok bool
	if c.Index, rest, ok = codec.ReadHead(rest, 0); !ok {
		return c, fmt.Errorf("%w: batch path index", ErrMalformed)
	}
	if c.Size, rest, ok = codec.ReadHead(rest, 0); !ok {
		return c, fmt.Errorf("%w: batch path size", ErrMalformed)
	}
	if len(rest) == 1 && rest[0] == 0xf6 { // null: no hashes (refused when folded)
		if c.Size < 2 || c.Size > MaxBatch || c.Index >= c.Size {
			return c, fmt.Errorf("%w: batch path of leaf %d of %d with no hashes", ErrMalformed, c.Index, c.Size)
		}
		return c, nil
	}
	if n, rest, ok = codec.ReadHead(rest, 4); !ok || n > maxPathHashes {
		return c, fmt.Errorf("%w: batch path hashes", ErrMalformed)
	}
	if c.Size < 2 || c.Size > MaxBatch || c.Index >= c.Size {
		return c, fmt.Errorf("%w: batch path of leaf %d of %d with %d hashes", ErrMalformed, c.Index, c.Size, n)
	}
	const item = 2 + rfc6962Size // a byte string of 32: 0x58 0x20 and the hash
	if uint64(len(rest)) != n*item {
		return c, fmt.Errorf("%w: batch path not canonically encoded", ErrMalformed)
	}
	if n == 0 {
		c.Hashes = [][]byte{}
		return c, nil
	}
	block := make([]byte, n*rfc6962Size) // the hashes, copied out of b
	c.Hashes = make([][]byte, n)
	for i := range c.Hashes {
		if rest[0] != 0x58 || rest[1] != rfc6962Size {
			return BatchPath{}, fmt.Errorf("%w: batch path hash is not a byte string of %d", ErrMalformed, rfc6962Size)
		}
		h := block[i*rfc6962Size : (i+1)*rfc6962Size : (i+1)*rfc6962Size]
		copy(h, rest[2:item])
		c.Hashes[i] = h
		rest = rest[item:]
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
	msg, err := batchSigned(collectBatchDomain, CollectStatement(key, st.At), p.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: collected at %d: %w", ErrForgedProof, st.At, err)
	}
	return msg, nil
}
