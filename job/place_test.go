package job

import (
	"bytes"
	"errors"
	"testing"

	"github.com/up-pool/up/codec"
)

// TestBatchSharesPlace: the specs of one signed batch share one place key
// (their batch root's), two batches have two, and a spec signed alone is
// placed by its own key; the listing of each names the same place.
func TestBatchSharesPlace(t *testing.T) {
	key := testKey(1)
	a, err := SignBatch(batchSpecs(5), key)
	if err != nil {
		t.Fatal(err)
	}
	other := batchSpecs(6)[1:] // other nonces: another tree
	other[0].Created++
	b, err := SignBatch(other, key)
	if err != nil {
		t.Fatal(err)
	}
	place := func(s *Signed) []byte {
		t.Helper()
		p, err := s.PlaceKey()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa := place(a[0])
	if !bytes.HasPrefix(pa, []byte(placePrefix)) || len(pa) != len(placePrefix)+PlaceRootLen {
		t.Fatalf("a batch's place key %q", pa)
	}
	for i, s := range a {
		if !bytes.Equal(place(s), pa) {
			t.Errorf("spec %d of a batch placed apart from spec 0", i)
		}
		_, spec, err := Decode(s.Encode())
		if err != nil {
			t.Fatal(err)
		}
		l := ListingOf(s, spec)
		if !bytes.Equal(l.PlaceKey(), pa) {
			t.Errorf("spec %d's listing places it at %q, its spec at %q", i, l.PlaceKey(), pa)
		}
	}
	if bytes.Equal(place(b[0]), pa) {
		t.Error("two batches share a place")
	}
	alone, err := Sign(testSpec(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(place(alone), alone.Key()) {
		t.Error("a spec signed alone is not placed by its key")
	}
}

// TestListingPlaceMatches: a node holding a spec refuses a listing that
// names another place, or none, for a spec of a batch (control: the
// listing as signed matches); the listing's place round-trips through
// its encoding, and a listing without one keeps its four elements.
func TestListingPlaceMatches(t *testing.T) {
	key := testKey(2)
	signed, err := SignBatch(batchSpecs(3), key)
	if err != nil {
		t.Fatal(err)
	}
	s, spec, err := Decode(signed[1].Encode())
	if err != nil {
		t.Fatal(err)
	}
	l := ListingOf(s, spec)
	if !l.Matches(s, spec) {
		t.Fatal("control: the spec's own listing does not match it")
	}
	sl, err := SignListing(l, key)
	if err != nil {
		t.Fatal(err)
	}
	_, back, err := DecodeListing(sl.Encode())
	if err != nil || !bytes.Equal(back.Place, l.Place) || !back.Matches(s, spec) {
		t.Fatalf("decoded listing: %v, place %x want %x", err, back.Place, l.Place)
	}
	wrong := *l
	wrong.Place = bytes.Repeat([]byte{7}, PlaceRootLen)
	none := *l
	none.Place = nil
	for name, bad := range map[string]*Listing{"another place": &wrong, "no place": &none} {
		if bad.Matches(s, spec) {
			t.Errorf("a listing with %s matches a spec of a batch", name)
		}
	}
	alone, err := Sign(testSpec(), key)
	if err != nil {
		t.Fatal(err)
	}
	_, aspec, _ := Decode(alone.Encode())
	la := ListingOf(alone, aspec)
	enc, err := la.Encode()
	if err != nil || enc[0] != 0x84 || la.Place != nil {
		t.Fatalf("a listing without a place: %v, first byte %#x, want an array of 4", err, enc[0])
	}
	withPlace := *la
	withPlace.Place = wrong.Place
	if withPlace.Matches(alone, aspec) {
		t.Error("a listing naming a place matches a spec signed alone")
	}
}

// TestListingPlaceBounds: a place of another length than a root's, or an
// empty one in the five-element layout, does not decode.
func TestListingPlaceBounds(t *testing.T) {
	key := testKey(3)
	alone, err := Sign(testSpec(), key)
	if err != nil {
		t.Fatal(err)
	}
	base := &Listing{Job: alone.Key(), Project: "lhc", Created: 1, Keywords: []string{"lhc"}}
	for _, place := range [][]byte{{1}, bytes.Repeat([]byte{1}, PlaceRootLen+1)} {
		l := *base
		l.Place = place
		sl, err := SignListing(&l, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := DecodeListing(sl.Encode()); !errors.Is(err, ErrMalformed) {
			t.Errorf("place of %d bytes: %v, want ErrMalformed", len(place), err)
		}
	}
	body, err := codec.Marshal(base) // five elements, the place empty
	if err != nil {
		t.Fatal(err)
	}
	sl := &SignedListing{Listing: body, Sig: make([]byte, 64)}
	if _, _, err := DecodeListing(sl.Encode()); !errors.Is(err, ErrMalformed) {
		t.Errorf("an empty place in five elements: %v, want ErrMalformed", err)
	}
}

// TestPlacedBatchBound: a spec whose batch holds more than MaxPlacedBatch
// specs does not decode (one place holds that many jobs at most).
func TestPlacedBatchBound(t *testing.T) {
	key := testKey(4)
	signed, err := SignBatch(batchSpecs(2), key)
	if err != nil {
		t.Fatal(err)
	}
	s := *signed[0]
	path, err := DecodeBatchPath(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	path.Size = MaxPlacedBatch + 1
	if s.Path, err = codec.Marshal(&path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(s.Encode()); !errors.Is(err, ErrMalformed) {
		t.Errorf("a batch of %d: %v, want ErrMalformed", path.Size, err)
	}
	path.Size = MaxPlacedBatch
	if s.Path, err = codec.Marshal(&path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(s.Encode()); err != nil {
		t.Errorf("control: a batch of %d: %v", path.Size, err)
	}
}
