package job

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/up-pool/up/codec"
)

// inputV1Layout is an input as versions 1 and 2 wrote it: without a blob.
type inputV1Layout struct {
	_      struct{} `cbor:",toarray"`
	URL    string
	SHA256 []byte
	Size   int64
}

// inputsV1Layout lays inputs out as versions 1 and 2 wrote them.
func inputsV1Layout(in []Input) []inputV1Layout {
	var out []inputV1Layout
	for _, x := range in {
		out = append(out, inputV1Layout{URL: x.URL, SHA256: x.SHA256, Size: x.Size})
	}
	return out
}

// specV1Layout is a spec as version 1 wrote it: without a lifetime.
type specV1Layout struct {
	_         struct{} `cbor:",toarray"`
	Version   uint16
	Project   string
	App       string
	Args      []string
	Inputs    []inputV1Layout
	Keywords  []string
	Resources []string
	TFinish   int64
	Created   int64
	Nonce     []byte
	CertRef   []byte
	ResultKey []byte
}

const (
	minute = int64(60_000)
	day    = 24 * 60 * minute
)

// TestOldSpecStillDecodes: a version 1 spec (no lifetime field) signed by
// the code before job lifetimes decodes, keeps its bytes (so its CID) and
// expires DefaultLifetimeMS after its creation.
func TestOldSpecStillDecodes(t *testing.T) {
	s := testSpec()
	old := specV1Layout{Version: 1, Project: s.Project, App: s.App, Args: s.Args, Inputs: inputsV1Layout(s.Inputs), Keywords: s.Keywords,
		Resources: s.Resources, TFinish: s.TFinish, Created: s.Created, Nonce: s.Nonce, CertRef: s.CertRef, ResultKey: s.ResultKey}
	b, err := codec.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(1)
	enc := (&Signed{Spec: b, Sig: ed25519.Sign(key, signPayload(b))}).Encode()
	signed, spec, err := Decode(enc)
	if err != nil {
		t.Fatalf("version 1 spec: %v", err)
	}
	if err := signed.Verify(key.Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(signed.Encode(), enc) {
		t.Fatal("version 1 spec re-encodes differently: its CID would change")
	}
	if re, err := codec.Marshal(spec); err != nil || !bytes.Equal(re, b) {
		t.Fatalf("version 1 spec re-marshals differently (%v)", err)
	}
	if got, want := spec.Expires(), s.Created+DefaultLifetimeMS; got != want {
		t.Fatalf("version 1 spec expires at %d, want creation + default lifetime %d", got, want)
	}
}

// TestLifetimeRoundTrip: a version 2 spec carries its lifetime under the
// project's signature; its expiry is creation + lifetime.
func TestLifetimeRoundTrip(t *testing.T) {
	s := testSpec()
	s.Lifetime = 14 * day
	signed := mustSign(t, s, testKey(1))
	_, got, err := Decode(signed.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Lifetime != 14*day || got.Expires() != s.Created+14*day {
		t.Fatalf("lifetime %d, expires %d; want %d, %d", got.Lifetime, got.Expires(), 14*day, s.Created+14*day)
	}
	s.Lifetime = 0
	if _, got, err = Decode(mustSign(t, s, testKey(1)).Encode()); err != nil || got.Expires() != s.Created+DefaultLifetimeMS {
		t.Fatalf("lifetime 0: %v, expires %d, want the default", err, got.Expires())
	}
}

// TestLifetimeBounds: lifetimes out of bounds, and a version 1 spec that
// claims one, are refused; a layout that does not match the version too.
func TestLifetimeBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version uint16
		life    int64
		ok      bool
	}{
		{"current default", SpecVersion, 0, true},
		{"current one minute", SpecVersion, minute, true},
		{"current max", SpecVersion, MaxLifetimeMS, true},
		{"current negative", SpecVersion, -1, false},
		{"current above max", SpecVersion, MaxLifetimeMS + 1, false},
		{"v2 max", 2, MaxLifetimeMS, true},
		{"v2 negative", 2, -1, false},
		{"v1 no lifetime", 1, 0, true},
		{"v1 with lifetime", 1, minute, false},
	} {
		s := testSpec()
		s.Version, s.Lifetime = tc.version, tc.life
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	// A current version number in the version 1 layout, and the reverse.
	s := testSpec()
	old := specV1Layout{Version: SpecVersion, Project: s.Project, App: s.App, Keywords: s.Keywords, TFinish: s.TFinish,
		Created: s.Created, Nonce: s.Nonce, CertRef: s.CertRef, ResultKey: s.ResultKey}
	b, _ := codec.Marshal(&old)
	var got Spec
	if err := codec.Unmarshal(b, &got); err == nil {
		t.Error("a current version spec in the version 1 layout decoded")
	}
	v1 := testSpec()
	v1.Version = 1
	b, _ = codec.Marshal((*specFields)(v1))
	if err := codec.Unmarshal(b, &got); err == nil {
		t.Error("a version 1 spec in the current layout decoded")
	} else if !errors.Is(err, codec.ErrMalformed) {
		t.Errorf("error %v is not ErrMalformed", err)
	}
}

// TestExpiredRule is the pure rule every node applies on its own clock:
// a job is expired once the node's clock passes its expiry (on the
// project's clock) by ExpiryMarginMS. With the project's clock and the
// node's each up to SkewMS off the true time, no node drops a job before
// the project's clock reaches its expiry, and every node drops it within
// the margin and two skews after.
func TestExpiredRule(t *testing.T) {
	const created = 1_760_000_000_000
	s := testSpec()
	s.Created, s.Lifetime = created, 14*day
	e := s.Expires()
	for _, tc := range []struct {
		name            string
		projSkew, nodeS int64 // clock minus true time, ms
	}{
		{"both true", 0, 0},
		{"node fast 10 min", 0, 10 * minute},
		{"node slow 10 min", 0, -10 * minute},
		{"project slow, node fast", -10 * minute, 10 * minute},
		{"project fast, node slow", 10 * minute, -10 * minute},
		{"both fast", 10 * minute, 10 * minute},
	} {
		// The project's clock reads e at true time e - projSkew; the node
		// drops at the first true time its clock judges expired.
		projectEnd := e - tc.projSkew
		drop := int64(-1)
		for trueT := projectEnd - 2*ExpiryMarginMS; trueT < projectEnd+10*ExpiryMarginMS; trueT += 1000 {
			if Expired(e, trueT+tc.nodeS) {
				drop = trueT
				break
			}
		}
		if drop < 0 {
			t.Errorf("%s: never expired", tc.name)
			continue
		}
		if drop < projectEnd {
			t.Errorf("%s: dropped %d s before the project's expiry", tc.name, (projectEnd-drop)/1000)
		}
		if late := drop - projectEnd; late > ExpiryMarginMS+2*SkewMS {
			t.Errorf("%s: dropped %d s after the project's expiry, more than margin + 2 skews", tc.name, late/1000)
		}
		if Expired(e, e+ExpiryMarginMS-1) || !Expired(e, e+ExpiryMarginMS) {
			t.Errorf("%s: the margin is not exactly ExpiryMarginMS", tc.name)
		}
	}
	// Far from the edges: live, and expired; no overflow.
	if Expired(e, created) || !Expired(e, e+day) || Expired(1<<62+(1<<62-1), created) {
		t.Error("Expired wrong far from the edge")
	}
	huge := testSpec()
	huge.Created, huge.Lifetime = 1<<63-1, MaxLifetimeMS
	if huge.Expires() < huge.Created {
		t.Error("Expires overflows")
	}
}
