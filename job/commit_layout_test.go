package job

import "testing"

// TestCannotUseCommit: true for signed specs in the version 1–4 layouts
// (and never for a spec that decodes as using commit–reveal), false for
// a version 5 spec with commit–reveal, a version 6 one, and bytes it
// cannot read (the caller then decodes). Control: the version 5 spec
// does use commit–reveal, so a check answering true for every spec
// fails here.
func TestCannotUseCommit(t *testing.T) {
	key := testKey(7)
	for _, v := range []uint16{specVersion1, specVersion2, specVersion3} {
		s := testSpecVersion(v)
		if v == specVersion1 {
			s.Lifetime = 0
		}
		if v != specVersion3 {
			s.Module, s.Inputs = nil, nil
		}
		enc := mustSign(t, s, key).Encode()
		_, got, err := Decode(enc)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if !CannotUseCommit(enc) || got.UsesCommit() {
			t.Fatalf("version %d spec: CannotUseCommit %v, UsesCommit %v", v, CannotUseCommit(enc), got.UsesCommit())
		}
	}
	v4 := testSpecV4()
	if enc := mustSign(t, v4, key).Encode(); !CannotUseCommit(enc) {
		t.Fatal("a version 4 spec may use commit–reveal, says CannotUseCommit")
	}
	v5 := testSpecV4()
	v5.Commit, v5.RevealWait = 2, 60_000
	v5.Version = v5.LeastVersion()
	enc := mustSign(t, v5, key).Encode()
	if _, got, err := Decode(enc); err != nil || !got.UsesCommit() {
		t.Fatalf("control: the version 5 spec decodes (%v) using commit–reveal (%v)", err, got != nil && got.UsesCommit())
	}
	if CannotUseCommit(enc) {
		t.Fatal("a version 5 spec with commit–reveal cannot use it, says CannotUseCommit")
	}
	v6 := testSpecV4()
	v6.Version = specVersion6
	v6enc := mustSign(t, v6, key).Encode()
	for _, b := range [][]byte{v6enc, nil, {0x82}, []byte("not cbor"), append(v6enc, 0)} {
		if CannotUseCommit(b) {
			t.Fatalf("CannotUseCommit(%x) = true", b)
		}
	}
}
