package job

import (
	"crypto/ed25519"
	"testing"
)

// FuzzDecodeListing: arbitrary bytes never panic the listing decoder; a
// listing that decodes re-encodes to the same bytes.
func FuzzDecodeListing(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	spec := &Spec{Version: SpecVersion, Project: "lhc", App: "a", Keywords: []string{"lhc", "x"}, Resources: []string{"mem:small"},
		TFinish: 1, Created: 1, Nonce: make([]byte, NonceLen), CertRef: make([]byte, CertRefLen), ResultKey: make([]byte, ResultKeyLen)}
	s, err := Sign(spec, key)
	if err != nil {
		f.Fatal(err)
	}
	sl, err := SignListing(ListingOf(s, spec), key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sl.Encode())
	// A listing of a batch's job: it names the batch root, its place.
	two, err := SignBatch([]*Spec{spec, {Version: SpecVersion, Project: "lhc", App: "b", Keywords: []string{"lhc"},
		TFinish: 1, Created: 1, Nonce: make([]byte, NonceLen), CertRef: make([]byte, CertRefLen), ResultKey: make([]byte, ResultKeyLen)}}, key)
	if err != nil {
		f.Fatal(err)
	}
	placed, err := SignListing(ListingOf(two[0], spec), key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(placed.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		signed, l, err := DecodeListing(b)
		if err != nil {
			return
		}
		if string(signed.Encode()) != string(b) {
			t.Fatalf("listing decoded from %x re-encodes differently", b)
		}
		if body, err := l.Encode(); err != nil || string(body) != string(signed.Listing) {
			t.Fatalf("listing body decoded from %x re-encodes differently: %v", signed.Listing, err)
		}
		if len(l.Place) != 0 && len(l.Place) != PlaceRootLen {
			t.Fatalf("decoded a place of %d bytes", len(l.Place))
		}
		_ = l.Allows("lhc")
	})
}
