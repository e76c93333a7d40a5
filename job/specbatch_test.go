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
