package job

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/up-pool/up/codec"
)

func batchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("job-key-%04d", i))
	}
	return keys
}

// TestCollectBatchProves: every job of a batch of any size is proven by
// its proof (one signature for the batch), through its encoding too; and
// a batch of one is a plain SignCollected proof.
func TestCollectBatchProves(t *testing.T) {
	project := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub := project.Public().(ed25519.PublicKey)
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 1000} {
		keys := batchKeys(n)
		proofs, err := SignCollectedBatch(keys, 42, project)
		if err != nil || len(proofs) != n {
			t.Fatalf("%d jobs: %d proofs, %v", n, len(proofs), err)
		}
		for i, k := range keys {
			pr, err := DecodeProof(proofs[i].Encode())
			if err != nil {
				t.Fatalf("%d jobs, job %d: decode: %v", n, i, err)
			}
			if err := CheckCollected(k, State{Phase: Collected, At: 42}, pr, pub); err != nil {
				t.Fatalf("%d jobs, job %d: %v", n, i, err)
			}
			if (n == 1) != (len(pr.Path) == 0) {
				t.Fatalf("%d jobs: path of %d bytes", n, len(pr.Path))
			}
			if i > 0 && !bytes.Equal(pr.Sig, proofs[0].Sig) {
				t.Fatalf("%d jobs: job %d under another signature", n, i)
			}
		}
	}
}

// TestCollectBatchRefuses: a batch proof proves its own job at its own
// time under its project's key only; a damaged path or signature is
// refused as forged, a malformed path as forged too.
func TestCollectBatchRefuses(t *testing.T) {
	project := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	pub := project.Public().(ed25519.PublicKey)
	keys := batchKeys(13)
	proofs, err := SignCollectedBatch(keys, 42, project)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Phase: Collected, At: 42}
	path, err := DecodeBatchPath(proofs[5].Path)
	if err != nil {
		t.Fatal(err)
	}
	reencode := func(c BatchPath) []byte {
		b, err := codec.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	flipped := path
	flipped.Hashes = append([][]byte(nil), path.Hashes...)
	flipped.Hashes[1] = bytes.Clone(path.Hashes[1])
	flipped.Hashes[1][3] ^= 1
	moved := path
	moved.Index = 6
	shrunk := path
	shrunk.Size = 12
	one := path
	one.Size, one.Index = 1, 0
	badSig := proofs[5]
	badSig.Sig = bytes.Clone(badSig.Sig)
	badSig.Sig[0] ^= 1
	for _, tc := range []struct {
		name string
		key  []byte
		st   State
		pr   Proof
		pub  ed25519.PublicKey
		want error
	}{
		{"another job's proof", keys[6], st, proofs[5], pub, ErrForgedProof},
		{"another time", keys[5], State{Phase: Collected, At: 43}, proofs[5], pub, ErrForgedProof},
		{"another project's key", keys[5], st, proofs[5], other.Public().(ed25519.PublicKey), ErrForgedProof},
		{"a path hash flipped", keys[5], st, Proof{Sig: proofs[5].Sig, Path: reencode(flipped)}, pub, ErrForgedProof},
		{"another index", keys[5], st, Proof{Sig: proofs[5].Sig, Path: reencode(moved)}, pub, ErrForgedProof},
		{"another size", keys[5], st, Proof{Sig: proofs[5].Sig, Path: reencode(shrunk)}, pub, ErrForgedProof},
		{"a batch of one", keys[5], st, Proof{Sig: proofs[5].Sig, Path: reencode(one)}, pub, ErrForgedProof},
		{"signature damaged", keys[5], st, badSig, pub, ErrForgedProof},
		{"the batch signature without the path", keys[5], st, Proof{Sig: proofs[5].Sig}, pub, ErrForgedProof},
		{"no signature", keys[5], st, Proof{Path: proofs[5].Path}, pub, ErrNoProof},
		{"garbage path", keys[5], st, Proof{Sig: proofs[5].Sig, Path: []byte{0x83, 1}}, pub, ErrForgedProof},
	} {
		if err := CheckCollected(tc.key, tc.st, tc.pr, tc.pub); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The control: the undamaged proof passes.
	if err := CheckCollected(keys[5], st, proofs[5], pub); err != nil {
		t.Fatalf("undamaged proof: %v", err)
	}
}

// TestProofEncodingKeepsV1: a proof without a path encodes as before
// (three elements) and decodes back; one with a path round-trips; an
// encoded empty path is refused (one proof, one encoding).
func TestProofEncodingKeepsV1(t *testing.T) {
	v1 := Proof{Sig: []byte{1}, Cert: []byte{2}, Claim: []byte{3}}
	old, err := codec.Marshal(&proofV1{Sig: v1.Sig, Cert: v1.Cert, Claim: v1.Claim})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v1.Encode(), old) {
		t.Fatalf("a proof without a path encodes as %x, before %x", v1.Encode(), old)
	}
	withPath := Proof{Sig: []byte{1}, Path: []byte{4}}
	got, err := DecodeProof(withPath.Encode())
	if err != nil || !bytes.Equal(got.Path, withPath.Path) || !bytes.Equal(got.Sig, withPath.Sig) {
		t.Fatalf("proof with a path decodes as %+v, %v", got, err)
	}
	empty, err := codec.Marshal(&Proof{Sig: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeProof(empty); !errors.Is(err, ErrMalformed) {
		t.Fatalf("four elements with an empty path: %v, want ErrMalformed", err)
	}
}

// TestBatchPathOneEncoding: a path decodes from its canonical encoding
// only; the same values with a longer integer head, a longer array head
// decode with the codec but are refused (the control: codec.Unmarshal
// takes them, so the canonical check is what refuses them); a hash as a
// text string is refused too.
func TestBatchPathOneEncoding(t *testing.T) {
	proofs, err := SignCollectedBatch(batchKeys(300), 1, ed25519.NewKeyFromSeed(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	canon := proofs[5].Path // index 5 of 300: a one-byte index, a two-byte size
	if _, err := DecodeBatchPath(canon); err != nil {
		t.Fatalf("canonical path: %v", err)
	}
	if canon[0] != 0x83 || canon[1] != 5 || canon[2] != 0x19 || canon[5]&0xe0 != 0x80 || canon[6] != 0x58 {
		t.Fatalf("path %x not laid out as this test expects", canon[:8])
	}
	splice := func(at, drop int, with ...byte) []byte {
		return append(append(append([]byte(nil), canon[:at]...), with...), canon[at+drop:]...)
	}
	for _, tc := range []struct {
		name       string
		b          []byte
		codecTakes bool
	}{
		{"index in a two-byte head", splice(1, 1, 0x18, 5), true},
		{"size in a four-byte head", splice(2, 3, 0x1a, 0, 0, canon[3], canon[4]), true},
		{"hashes' array in a two-byte head", splice(5, 1, 0x98, canon[5]&0x1f), true},
		{"a hash as a text string", splice(6, 1, 0x78), false},
	} {
		var c BatchPath
		if err := codec.Unmarshal(tc.b, &c); (err == nil) != tc.codecTakes {
			t.Errorf("%s: codec.Unmarshal says %v", tc.name, err)
		}
		if _, err := DecodeBatchPath(tc.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", tc.name, err)
		}
	}
}

// FuzzDecodeBatchPath: never a panic; what decodes is within bounds and
// re-encodes to the same bytes.
func FuzzDecodeBatchPath(f *testing.F) {
	proofs, err := SignCollectedBatch(batchKeys(9), 1, ed25519.NewKeyFromSeed(make([]byte, 32)))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range proofs {
		f.Add(p.Path)
	}
	f.Add([]byte{})
	f.Add([]byte{0x83, 0, 2, 0x80})
	f.Add([]byte{0x83, 0x18, 1, 2, 0x80})                // index in a longer head than it needs
	f.Add([]byte{0x83, 0, 0x19, 0x01, 0x00, 0x80})       // size 256
	f.Add([]byte{0x83, 0, 2, 0x81, 0x78, 0x20})          // a text string
	f.Add([]byte{0x83, 0, 2, 0x9f, 0xff})                // an indefinite array
	f.Add([]byte{0x83, 0, 0x1b, 0, 0, 0, 1, 0, 0, 0, 0}) // size past 32 bits
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeBatchPath(b)
		ref, refErr := referenceDecodeBatchPath(b)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("DecodeBatchPath: %v; the reflective decode and re-encoding check: %v", err, refErr)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if c.Size < 2 || c.Size > MaxBatch || c.Index >= c.Size || len(c.Hashes) > maxPathHashes {
			t.Fatalf("decoded out of bounds: %+v", c)
		}
		if fmt.Sprint(c) != fmt.Sprint(ref) {
			t.Fatalf("decoded %+v, the reference %+v", c, ref)
		}
		if re, err := codec.Marshal(&c); err != nil || !bytes.Equal(re, b) {
			t.Fatalf("re-encodes differently: %v", err)
		}
	})
}

// referenceDecodeBatchPath is DecodeBatchPath as it was: the codec's
// reflective decode, the bounds, and a re-encoding that must give the
// same bytes.
func referenceDecodeBatchPath(b []byte) (BatchPath, error) {
	var c BatchPath
	if len(b) == 0 || len(b) > MaxPathBytes {
		return c, ErrMalformed
	}
	if err := codec.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if c.Size < 2 || c.Size > MaxBatch || c.Index >= c.Size || len(c.Hashes) > maxPathHashes {
		return c, ErrMalformed
	}
	for _, h := range c.Hashes {
		if len(h) != rfc6962Size {
			return c, ErrMalformed
		}
	}
	if re, err := codec.Marshal(&c); err != nil || !bytes.Equal(re, b) {
		return c, ErrMalformed
	}
	return c, nil
}
