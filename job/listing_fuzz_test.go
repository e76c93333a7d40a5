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
	f.Fuzz(func(t *testing.T, b []byte) {
		signed, l, err := DecodeListing(b)
		if err != nil {
			return
		}
		if string(signed.Encode()) != string(b) {
			t.Fatalf("listing decoded from %x re-encodes differently", b)
		}
		_ = l.Allows("lhc")
	})
}
