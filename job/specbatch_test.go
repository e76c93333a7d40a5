package job

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/sigverify"
)

func batchSpecs(n int) []*Spec {
	specs := make([]*Spec, n)
	for i := range specs {
		s := testSpec()
		s.Nonce = bytes.Repeat([]byte{byte(i), byte(i >> 8)}, NonceLen/2)
		specs[i] = s
	}
	return specs
}

// TestSignBatchVerifies: each spec of a batch decodes from its encoding
// and verifies under the project's key, alone or through a shared Once;
// its listing, batch-signed too, verifies and matches it; a batch of one
// is a plain Sign, byte for byte (its CID as before batches).
func TestSignBatchVerifies(t *testing.T) {
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	for _, n := range []int{1, 2, 3, 32, 64} {
		signed, err := SignBatch(batchSpecs(n), key)
		if err != nil || len(signed) != n {
			t.Fatalf("%d specs: %d signed, %v", n, len(signed), err)
		}
		once := sigverify.NewOnce(16)
		listings := make([]*Listing, n)
		cids := map[string]bool{}
		for i, s := range signed {
			got, spec, err := Decode(s.Encode())
			if err != nil {
				t.Fatalf("%d specs, spec %d: decode: %v", n, i, err)
			}
			if err := got.Verify(pub); err != nil {
				t.Fatalf("%d specs, spec %d: %v", n, i, err)
			}
			if err := got.VerifyOnce(pub, once); err != nil {
				t.Fatalf("%d specs, spec %d (once): %v", n, i, err)
			}
			cids[got.CID().String()] = true
			listings[i] = ListingOf(got, spec)
		}
		if len(cids) != n {
			t.Fatalf("%d specs: %d distinct CIDs", n, len(cids))
		}
		sls, err := SignListingBatch(listings, key)
		if err != nil {
			t.Fatal(err)
		}
		for i, sl := range sls {
			got, l, err := DecodeListing(sl.Encode())
			if err != nil || got.VerifyOnce(pub, once) != nil || string(l.Job) != string(listings[i].Job) {
				t.Fatalf("%d listings, listing %d: %v", n, i, err)
			}
		}
	}
	alone := mustSign(t, batchSpecs(1)[0], key)
	one, err := SignBatch(batchSpecs(1), key)
	if err != nil || !bytes.Equal(one[0].Encode(), alone.Encode()) {
		t.Fatalf("a batch of one differs from Sign: %v", err)
	}
	v1, err := codec.Marshal(&signedV1{Spec: alone.Spec, Sig: alone.Sig})
	if err != nil || !bytes.Equal(alone.Encode(), v1) {
		t.Fatalf("a spec without a path no longer encodes as two elements: %v", err)
	}
}

// TestSignBatchRefuses: a spec carrying another spec's path, a damaged
// path or signature, or another project's key does not verify; a listing
// likewise; an encoded empty path does not decode. The undamaged spec is
// the control.
func TestSignBatchRefuses(t *testing.T) {
	key, other := testKey(1), testKey(2)
	pub := key.Public().(ed25519.PublicKey)
	signed, err := SignBatch(batchSpecs(9), key)
	if err != nil {
		t.Fatal(err)
	}
	swapped := *signed[3]
	swapped.Path = signed[4].Path
	bad := *signed[3]
	bad.Sig = bytes.Clone(bad.Sig)
	bad.Sig[7] ^= 1
	path, err := DecodeBatchPath(signed[3].Path)
	if err != nil {
		t.Fatal(err)
	}
	path.Hashes[0] = bytes.Clone(path.Hashes[0])
	path.Hashes[0][0] ^= 1
	flipped := *signed[3]
	if flipped.Path, err = codec.Marshal(&path); err != nil {
		t.Fatal(err)
	}
	bare := *signed[3]
	bare.Path = nil
	for name, s := range map[string]*Signed{"another spec's path": &swapped, "signature damaged": &bad, "path hash flipped": &flipped, "batch signature without its path": &bare} {
		if err := s.Verify(pub); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
	if err := signed[3].Verify(other.Public().(ed25519.PublicKey)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another project's key: %v", err)
	}
	if err := signed[3].Verify(pub); err != nil {
		t.Fatalf("control: the undamaged spec: %v", err)
	}
	empty, err := codec.Marshal(&Signed{Spec: signed[3].Spec, Sig: signed[3].Sig, Path: []byte{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(empty); !errors.Is(err, ErrMalformed) {
		t.Fatalf("three elements with an empty path: %v, want ErrMalformed", err)
	}
	_, spec, err := Decode(signed[3].Encode())
	if err != nil {
		t.Fatal(err)
	}
	sls, err := SignListingBatch([]*Listing{ListingOf(signed[3], spec), ListingOf(signed[4], spec)}, key)
	if err != nil {
		t.Fatal(err)
	}
	moved := *sls[0]
	moved.Path = sls[1].Path
	if err := moved.Verify(pub); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("listing with another listing's path: %v", err)
	}
}

// TestSignSpecBatchGivesRootAndEncodings: SignSpecBatch's root is the one
// each path leads to (BatchRoot) and its encodings are Encode's, for
// batches of every shape of tree; SignBatch gives the same signed specs.
// Control: another batch's root differs.
func TestSignSpecBatchGivesRootAndEncodings(t *testing.T) {
	key := testKey(1)
	var last []byte
	for _, n := range []int{2, 3, 4, 5, 7, 8, 9, 31, 33, 64} {
		b, err := SignSpecBatch(batchSpecs(n), key)
		if err != nil {
			t.Fatalf("%d specs: %v", n, err)
		}
		plain, err := SignBatch(batchSpecs(n), key)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range b.Signed {
			root, err := s.BatchRoot()
			if err != nil || !bytes.Equal(root, b.Root) {
				t.Fatalf("%d specs, spec %d: root %x, BatchRoot %x, %v", n, i, b.Root, root, err)
			}
			if !bytes.Equal(b.Encoded[i], s.Encode()) || !bytes.Equal(b.Encoded[i], plain[i].Encode()) {
				t.Fatalf("%d specs, spec %d: encodings differ", n, i)
			}
		}
		if bytes.Equal(last, b.Root) {
			t.Fatalf("control: batches of %d and fewer specs share a root", n)
		}
		last = b.Root
	}
}

// TestHandEncodingsAreMarshal: the hand-written encodings of signed specs
// and listings (with and without a path) and of batch paths are
// codec.Marshal's, nil and empty fields and long ones included.
func TestHandEncodingsAreMarshal(t *testing.T) {
	fields := [][]byte{nil, {}, {1}, bytes.Repeat([]byte{2}, 23), bytes.Repeat([]byte{3}, 24), bytes.Repeat([]byte{4}, 300), bytes.Repeat([]byte{5}, 70000)}
	for _, a := range fields {
		for _, sig := range fields[:4] {
			for _, path := range fields[:5] {
				s := &Signed{Spec: a, Sig: sig, Path: path}
				var want []byte
				if len(path) == 0 {
					want, _ = codec.Marshal(&signedV1{Spec: a, Sig: sig})
				} else {
					want, _ = codec.Marshal(s)
				}
				if got := s.Encode(); !bytes.Equal(got, want) {
					t.Fatalf("signed spec of %d, %d, %d bytes: %x…, want %x…", len(a), len(sig), len(path), got[:min(8, len(got))], want[:min(8, len(want))])
				}
				l := &SignedListing{Listing: a, Sig: sig, Path: path}
				if len(path) == 0 {
					want, _ = codec.Marshal(&signedListingV1{Listing: a, Sig: sig})
				} else {
					want, _ = codec.Marshal(l)
				}
				if got := l.Encode(); !bytes.Equal(got, want) {
					t.Fatalf("signed listing of %d, %d, %d bytes differs from Marshal", len(a), len(sig), len(path))
				}
			}
		}
	}
	for _, size := range []uint64{2, 23, 24, 255, 256, 65535, 65536, 1 << 40} {
		for _, hashes := range [][][]byte{nil, {}, {bytes.Repeat([]byte{9}, 32)}, {{1}, nil, {}}} {
			index := size - 1
			want, _ := codec.Marshal(&BatchPath{Index: index, Size: size, Hashes: hashes})
			if got := encodeBatchPath(index, size, hashes); !bytes.Equal(got, want) {
				t.Fatalf("path %d of %d with %d hashes: %x, want %x", index, size, len(hashes), got, want)
			}
		}
	}
}
