package project

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"golang.org/x/crypto/nacl/box"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
)

func testSpec(mod func(*job.Spec)) *job.Spec {
	s := &job.Spec{Version: job.SpecVersion, Project: "lhc", App: "sim", Args: []string{"1", "two"},
		Keywords: []string{"lhc", "gpu"}, TFinish: 3600_000, Created: 1_700_000_000_000,
		Nonce: bytes.Repeat([]byte{7}, job.NonceLen), CertRef: bytes.Repeat([]byte{1}, job.CertRefLen),
		ResultKey: bytes.Repeat([]byte{2}, job.ResultKeyLen)}
	if mod != nil {
		mod(s)
	}
	return s
}

// TestSignAgreesWithJobSign: signSpec, signListing and listingOf make
// byte for byte what job.Sign, job.SignListing and job.ListingOf make (so
// the same jobs, CIDs and listings), and refuse what job.Sign refuses.
func TestSignAgreesWithJobSign(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*job.Spec){
		"plain":       nil,
		"no args":     func(s *job.Spec) { s.Args = nil },
		"resources":   func(s *job.Spec) { s.Resources = []string{"ram:8", "gpu", "lhc"} },
		"inputs":      func(s *job.Spec) { s.Inputs = []job.Input{{URL: "https://x/y", SHA256: make([]byte, 32), Size: 9}} },
		"unicode":     func(s *job.Spec) { s.Args = []string{"ünï", ""}; s.Keywords = []string{"ζ"} },
		"bad nonce":   func(s *job.Spec) { s.Nonce = s.Nonce[:3] },
		"no keywords": func(s *job.Spec) { s.Keywords = nil },
		"too big": func(s *job.Spec) {
			s.Args = []string{string(bytes.Repeat([]byte("a"), 1000))}
			s.Args = append(s.Args, repeat(s.Args[0], 63)...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := testSpec(mod)
			want, werr := job.Sign(spec, key)
			got, enc, gerr := signSpec(spec, key)
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("job.Sign: %v; signSpec: %v", werr, gerr)
			}
			if werr != nil {
				return
			}
			if !bytes.Equal(got.Encode(), want.Encode()) || !bytes.Equal(enc, want.Encode()) {
				t.Fatal("signed specs differ")
			}
			if err := got.Verify(key.Public().(ed25519.PublicKey)); err != nil {
				t.Fatal(err)
			}
			wantL, err := job.SignListing(job.ListingOf(want, spec), key)
			if err != nil {
				t.Fatal(err)
			}
			gotL, err := signListing(listingOf(want.Key(), spec), key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotL.Encode(), wantL.Encode()) {
				t.Fatal("signed listings differ")
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestPreparedComputesOnce: a Prepared's encoding, CID and key are those
// of its job.Signed, whether Sign filled them or they are computed on
// first use.
func TestPreparedComputesOnce(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	s, err := job.Sign(testSpec(nil), key)
	if err != nil {
		t.Fatal(err)
	}
	_, enc, err := signSpec(testSpec(nil), key)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*Prepared{"literal": {Signed: s}, "signed": {Signed: s, enc: enc}} {
		if !bytes.Equal(p.Encode(), s.Encode()) || !p.CID().Equals(s.CID()) || !bytes.Equal(p.Key(), s.Key()) || p.cidString() != s.CID().String() {
			t.Errorf("%s: Prepared's encoding, CID or key differ from the signed spec's", name)
		}
		if c, err := cid.Cast(p.Key()); err != nil || !c.Equals(s.CID()) {
			t.Errorf("%s: key does not cast to the CID: %v", name, err)
		}
	}
}

// resultFixture is a project result key pair and clients with fake
// certificates (DER "cert:<name>") that certKey accepts.
type resultFixture struct {
	pub, priv *[32]byte
	clients   map[string]ed25519.PrivateKey
}

func newResultFixture(t *testing.T) *resultFixture {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &resultFixture{pub: pub, priv: priv, clients: map[string]ed25519.PrivateKey{}}
	for _, n := range []string{"alice", "bob"} {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		f.clients[n] = k
	}
	return f
}

func (f *resultFixture) certKey(der []byte) (ed25519.PublicKey, error) {
	name, ok := bytes.CutPrefix(der, []byte("cert:"))
	if k := f.clients[string(name)]; ok && k != nil {
		return k.Public().(ed25519.PublicKey), nil
	}
	return nil, fmt.Errorf("unknown certificate %q", der)
}

func (f *resultFixture) opener() *opener {
	return &opener{keys: newOpenKeys(f.priv), cache: &keyCaches{}, cert: func(der []byte) (string, ed25519.PublicKey, error) {
		k, err := f.certKey(der)
		return string(bytes.TrimPrefix(der, []byte("cert:"))), k, err
	}}
}

// seal makes the envelope client sends for job, altered by mod.
func (f *resultFixture) seal(t *testing.T, client string, jobKey []byte, mod func(in *result.Inner, e *result.Envelope) []byte) []byte {
	t.Helper()
	in := result.Inner{Job: jobKey, ClientCert: []byte("cert:" + client), Output: []byte("42\n"), ExitCode: 0, CPU: 7, Wall: 9, At: 1_700_000_000_000}
	e, err := result.Seal(in, f.clients[client], f.pub[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		if b := mod(&in, e); b != nil {
			return b
		}
	}
	return e.Encode()
}

// sessionSeal makes the envelope a client sends for job under session
// s, its inner record naming certificate "cert:"+cert, altered by mod.
func (f *resultFixture) sessionSeal(t *testing.T, s *result.Session, cert string, jobKey []byte, mod func(in *result.Inner)) []byte {
	t.Helper()
	in := result.Inner{Job: jobKey, ClientCert: []byte("cert:" + cert), Output: []byte("43\n"), CPU: 5, Wall: 6, At: 1_700_000_000_001}
	if mod != nil {
		mod(&in)
	}
	e, err := s.Seal(in, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var key ed25519.PrivateKey
	for _, k := range f.clients {
		if k.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(e.Client)) {
			key = k
		}
	}
	result.SignOuter(e, key)
	return e.Encode()
}

// resealed builds an envelope around a hand-made inner record, signed
// outside by key (as a client that misbehaves could).
func (f *resultFixture) resealed(t *testing.T, in result.Inner, key ed25519.PrivateKey, outerJob []byte) []byte {
	t.Helper()
	b, err := codec.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.SealAnonymous(nil, b, f.pub, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := &result.Envelope{Job: outerJob, Client: key.Public().(ed25519.PublicKey), Sealed: sealed}
	e.Sig = ed25519.Sign(key, outerPayload(e))
	return e.Encode()
}

func outerPayload(e *result.Envelope) []byte {
	h := sha256.Sum256(e.Sealed)
	return append(append(append([]byte(outerDomain), byte(len(e.Job))), e.Job...), h[:]...)
}

func innerSig(t *testing.T, in result.Inner, key ed25519.PrivateKey) []byte {
	t.Helper()
	in.Sig = nil
	b, err := codec.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	return ed25519.Sign(key, append([]byte(innerDomain), b...))
}

// referenceOpen is how the project opened results before: result.Open
// behind the check that the envelope names the job asked for.
func (f *resultFixture) referenceOpen(b, key []byte) (*result.Inner, error) {
	env, err := result.Decode(b)
	if err != nil {
		return nil, err
	}
	if string(env.Job) != string(key) {
		return nil, fmt.Errorf("%w: result names another job", result.ErrForged)
	}
	return result.Open(env, f.priv, f.certKey)
}

// TestOpenAgreesWithResultOpen: the opener accepts exactly the results
// result.Open accepts, with the same content, and refuses the others with
// the same error (so the same wrapped ErrForged or ErrMalformed).
func TestOpenAgreesWithResultOpen(t *testing.T) {
	f := newResultFixture(t)
	jobA, jobB := []byte("job-a"), []byte("job-b")
	alice, bob := f.clients["alice"], f.clients["bob"]
	honestInner := result.Inner{Job: jobA, ClientCert: []byte("cert:alice"), Output: []byte("7"), At: 1}
	aliceSession, err := result.NewSession(alice, f.pub[:], rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bobSession, err := result.NewSession(bob, f.pub[:], rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		env    []byte
		forged bool // refused
	}{
		{"honest", f.seal(t, "alice", jobA, nil), false},
		{"failed job", f.seal(t, "bob", jobA, func(in *result.Inner, e *result.Envelope) []byte {
			in.ExitCode, in.Error = 3, "killed"
			e2, err := result.Seal(*in, bob, f.pub[:], nil)
			if err != nil {
				t.Fatal(err)
			}
			return e2.Encode()
		}), false},
		{"another job", f.seal(t, "alice", jobB, nil), true},
		{"sealed bytes altered", f.seal(t, "alice", jobA, func(_ *result.Inner, e *result.Envelope) []byte {
			e.Sealed[len(e.Sealed)/2] ^= 1
			return e.Encode()
		}), true},
		{"sealed bytes altered and re-signed", f.seal(t, "alice", jobA, func(_ *result.Inner, e *result.Envelope) []byte {
			e.Sealed[len(e.Sealed)/2] ^= 1
			e.Sig = ed25519.Sign(alice, outerPayload(e))
			return e.Encode()
		}), true},
		{"outer signature altered", f.seal(t, "alice", jobA, func(_ *result.Inner, e *result.Envelope) []byte {
			e.Sig[5] ^= 1
			return e.Encode()
		}), true},
		{"outer signed by another key", f.seal(t, "alice", jobA, func(_ *result.Inner, e *result.Envelope) []byte {
			e.Sig = ed25519.Sign(bob, outerPayload(e))
			return e.Encode()
		}), true},
		{"inner signature altered", func() []byte {
			in := honestInner
			in.Sig = innerSig(t, in, alice)
			in.Sig[0] ^= 1
			return f.resealed(t, in, alice, jobA)
		}(), true},
		{"inner signed by another key", func() []byte {
			in := honestInner
			in.Sig = innerSig(t, in, bob)
			return f.resealed(t, in, alice, jobA)
		}(), true},
		{"inner names another job", func() []byte {
			in := honestInner
			in.Job = jobB
			in.Sig = innerSig(t, in, alice)
			return f.resealed(t, in, alice, jobA)
		}(), true},
		{"outer client is not the certificate's", func() []byte {
			in := honestInner
			in.Sig = innerSig(t, in, alice)
			return f.resealed(t, in, bob, jobA)
		}(), true},
		{"outer client not the certificate's, inner signed by it", func() []byte {
			in := honestInner
			in.Sig = innerSig(t, in, bob)
			return f.resealed(t, in, bob, jobA)
		}(), true},
		{"unknown certificate", func() []byte {
			in := honestInner
			in.ClientCert = []byte("cert:mallory")
			in.Sig = innerSig(t, in, alice)
			return f.resealed(t, in, alice, jobA)
		}(), true},
		{"inner not CBOR", func() []byte {
			sealed, _ := box.SealAnonymous(nil, []byte("not cbor"), f.pub, rand.Reader)
			e := &result.Envelope{Job: jobA, Client: alice.Public().(ed25519.PublicKey), Sealed: sealed}
			e.Sig = ed25519.Sign(alice, outerPayload(e))
			return e.Encode()
		}(), true},
		{"inner not CBOR, outer bad", func() []byte {
			sealed, _ := box.SealAnonymous(nil, []byte("not cbor"), f.pub, rand.Reader)
			e := &result.Envelope{Job: jobA, Client: alice.Public().(ed25519.PublicKey), Sealed: sealed, Sig: make([]byte, 64)}
			return e.Encode()
		}(), true},
		{"session", f.sessionSeal(t, aliceSession, "alice", jobA, nil), false},
		{"session, another result of it", f.sessionSeal(t, aliceSession, "alice", jobA, nil), false},
		{"session, failed job", f.sessionSeal(t, bobSession, "bob", jobA, func(in *result.Inner) { in.ExitCode, in.Error = 3, "killed" }), false},
		{"session copied into another client's envelope", func() []byte {
			e, _ := result.Decode(f.sessionSeal(t, aliceSession, "alice", jobA, nil))
			e.Client = bob.Public().(ed25519.PublicKey)
			result.SignOuter(e, bob)
			return e.Encode()
		}(), true},
		{"session moved to another job", func() []byte {
			e, _ := result.Decode(f.sessionSeal(t, aliceSession, "alice", jobB, nil))
			e.Job = jobA
			result.SignOuter(e, alice)
			return e.Encode()
		}(), true},
		{"session sealed bytes altered and re-signed", func() []byte {
			e, _ := result.Decode(f.sessionSeal(t, aliceSession, "alice", jobA, nil))
			e.Sealed[len(e.Sealed)-3] ^= 1
			result.SignOuter(e, alice)
			return e.Encode()
		}(), true},
		{"session note signed by another key", func() []byte {
			s, err := result.NewSession(alice, f.pub[:], rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := result.Decode(f.sessionSeal(t, s, "alice", jobA, nil))
			ss, _ := result.SplitSession(e.Sealed)
			copy(ss.Note, ed25519.Sign(bob, result.SessionNoteMessage(f.pub[:], ss.Eph)))
			result.SignOuter(e, alice)
			return e.Encode()
		}(), true},
		{"session of another project", func() []byte {
			other, _, err := box.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			s, err := result.NewSession(alice, other[:], rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			return f.sessionSeal(t, s, "alice", jobA, nil)
		}(), true},
		{"session, outer client not the certificate's", f.sessionSeal(t, bobSession, "alice", jobA, nil), true},
		{"not an envelope", []byte("garbage"), true},
		{"client key not a point", f.seal(t, "alice", jobA, func(_ *result.Inner, e *result.Envelope) []byte {
			e.Client = bytes.Repeat([]byte{0xff}, 32)
			return e.Encode()
		}), true},
	}
	o := f.opener()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := f.referenceOpen(tc.env, jobA)
			got, gerr := o.open(tc.env, jobA)
			if (werr != nil) != tc.forged {
				t.Fatalf("result.Open: %v; the case expects refused=%v", werr, tc.forged)
			}
			if (gerr == nil) != (werr == nil) || (werr != nil && gerr.Error() != werr.Error()) {
				t.Fatalf("opener: %v; result.Open: %v", gerr, werr)
			}
			for _, target := range []error{result.ErrForged, result.ErrMalformed} {
				if errors.Is(gerr, target) != errors.Is(werr, target) {
					t.Fatalf("opener: %v; result.Open: %v (wrapping %v differs)", gerr, werr, target)
				}
			}
			if werr != nil {
				return
			}
			env, _ := result.Decode(tc.env)
			wantR := Result{Client: string(bytes.TrimPrefix(want.ClientCert, []byte("cert:"))), ClientKey: env.Client, Output: want.Output,
				ExitCode: int(want.ExitCode), Error: want.Error, CPU: time.Duration(want.CPU) * time.Millisecond,
				Wall: time.Duration(want.Wall) * time.Millisecond, At: time.UnixMilli(want.At)}
			if fmt.Sprint(*got) != fmt.Sprint(wantR) {
				t.Fatalf("opened %+v, want %+v", *got, wantR)
			}
		})
	}
}

// TestVerifySigsRefusesOnlyTheBadCopy: in a batch of copies, one whose
// outer or inner signature is bad is refused, named by which, and the
// others pass.
func TestVerifySigsRefusesOnlyTheBadCopy(t *testing.T) {
	f := newResultFixture(t)
	o := f.opener()
	var batch []*unsealed
	for i := range 9 {
		key := []byte(fmt.Sprintf("job-%d", i))
		u, err := o.unseal(f.seal(t, []string{"alice", "bob"}[i%2], key, nil), key)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, u)
	}
	if errs := verifySigs(batch); errors.Join(errs...) != nil {
		t.Fatalf("honest batch: %v", errs)
	}
	batch[3].outSig = append([]byte(nil), batch[3].outSig...)
	batch[3].outSig[1] ^= 1
	batch[7].in.Sig = append([]byte(nil), batch[7].in.Sig...)
	batch[7].in.Sig[1] ^= 1
	for i, err := range verifySigs(batch) {
		switch i {
		case 3:
			if err == nil || err.Error() != result.ErrForged.Error()+": outer signature" {
				t.Errorf("copy 3 (outer signature altered): %v", err)
			}
		case 7:
			if err == nil || err.Error() != result.ErrForged.Error()+": inner signature" {
				t.Errorf("copy 7 (inner signature altered): %v", err)
			}
		default:
			if err != nil {
				t.Errorf("copy %d refused: %v", i, err)
			}
		}
	}
}

// TestOpenAnonymousMatchesNaCl: openAnonymous opens what nacl/box seals,
// as box.OpenAnonymous does, and refuses any altered byte.
// TestVerifySigsBatchSignedOnce: copies a client signed in one batch
// (result.SignOuterBatch) share one outer signature and root message,
// checked once for all of them; a copy whose message or key differs from
// its batch's is checked on its own and refused alone. Control: a check
// shared by signature alone passes both forgeries.
func TestVerifySigsBatchSignedOnce(t *testing.T) {
	f := newResultFixture(t)
	o := f.opener()
	envs := make([]*result.Envelope, 6)
	for i := range envs {
		in := result.Inner{Job: []byte(fmt.Sprintf("job-%d", i)), ClientCert: []byte("cert:alice"), Output: []byte("42\n"), CPU: 7, Wall: 9, At: 1_700_000_000_000}
		e, err := result.SealInner(in, f.clients["alice"], f.pub[:], nil)
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = e
	}
	if err := result.SignOuterBatch(envs, f.clients["alice"]); err != nil {
		t.Fatal(err)
	}
	unseal := func() []*unsealed {
		var us []*unsealed
		for i, e := range envs {
			u, err := o.unseal(e.Encode(), []byte(fmt.Sprintf("job-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			us = append(us, u)
		}
		return us
	}
	us := unseal()
	if !bytes.Equal(us[0].outer, us[5].outer) || !bytes.Equal(us[0].outSig, us[5].outSig) {
		t.Fatal("batch-signed copies do not share their outer message and signature")
	}
	if errs := verifySigs(us); errors.Join(errs...) != nil {
		t.Fatalf("honest batch: %v", errs)
	}
	us = unseal()
	us[2].outer = append(bytes.Clone(us[2].outer), 'x') // its path led to another root
	bob := f.clients["bob"].Public().(ed25519.PublicKey)
	bobKey, err := o.cache.clientKey(bob)
	if err != nil {
		t.Fatal(err)
	}
	us[4].key, us[4].pub = bob, bobKey // the batch's signature claimed for another key
	for i, err := range verifySigs(us) {
		forged := i == 2 || i == 4
		if forged && (err == nil || err.Error() != result.ErrForged.Error()+": outer signature") {
			t.Errorf("copy %d (not its batch's signature): %v", i, err)
		}
		if !forged && err != nil {
			t.Errorf("copy %d refused: %v", i, err)
		}
	}
}

func TestOpenAnonymousMatchesNaCl(t *testing.T) {
	pub, priv, _ := box.GenerateKey(rand.Reader)
	for _, n := range []int{0, 1, 100, 5000} {
		msg := make([]byte, n)
		_, _ = rand.Read(msg)
		sealed, err := box.SealAnonymous(nil, msg, pub, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		want, wok := box.OpenAnonymous(nil, sealed, pub, priv)
		got, gok := openAnonymous(sealed, pub, priv)
		if !wok || !gok || !bytes.Equal(got, want) || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: opened %v/%v", n, gok, wok)
		}
		for _, i := range []int{0, 31, 32, 47, len(sealed) - 1} {
			bad := bytes.Clone(sealed)
			bad[i] ^= 0x10
			_, wok := box.OpenAnonymous(nil, bad, pub, priv)
			_, gok := openAnonymous(bad, pub, priv)
			if wok || gok {
				t.Fatalf("%d bytes, byte %d altered: opened (%v, nacl %v)", n, i, gok, wok)
			}
		}
	}
	if _, ok := openAnonymous(make([]byte, box.AnonymousOverhead-1), pub, priv); ok {
		t.Fatal("a box shorter than the overhead opened")
	}
}

// BenchmarkSignJob compares signing a job (spec and listing) with the job
// package and as Project.Sign does.
func BenchmarkSignJob(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	spec := testSpec(nil)
	b.Run("job.Sign", func(b *testing.B) {
		for b.Loop() {
			s, _ := job.Sign(spec, key)
			_, _ = job.SignListing(job.ListingOf(s, spec), key)
		}
	})
	b.Run("project", func(b *testing.B) {
		for b.Loop() {
			s, enc, _ := signSpec(spec, key)
			p := &Prepared{Signed: s, enc: enc}
			_, _ = signListing(listingOf(p.Key(), spec), key)
		}
	})
}

// BenchmarkOpenResult compares opening a result with result.Open and
// with the opener, one at a time and in a batch of 64.
func BenchmarkOpenResult(b *testing.B) {
	t := &testing.T{}
	f := newResultFixture(t)
	var envs [][]byte
	var keys [][]byte
	for i := range 64 {
		key := []byte(fmt.Sprintf("job-%d", i))
		keys = append(keys, key)
		envs = append(envs, f.seal(t, "alice", key, nil))
	}
	b.Run("result.Open", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := f.referenceOpen(envs[i%64], keys[i%64]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("opener", func(b *testing.B) {
		o := f.opener()
		i := 0
		for b.Loop() {
			if _, err := o.open(envs[i%64], keys[i%64]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("opener-batch64", func(b *testing.B) {
		o := f.opener()
		for b.Loop() {
			us := make([]*unsealed, 64)
			for i := range us {
				var err error
				if us[i], err = o.unseal(envs[i], keys[i]); err != nil {
					b.Fatal(err)
				}
			}
			if err := errors.Join(verifySigs(us)...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/result")
	})
}

// BenchmarkSignSpecBatch measures signing a submission chunk of 64 specs
// and their listings as SubmitUnits does (Project.SignBatch), per job.
func BenchmarkSignSpecBatch(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	specs := make([]*job.Spec, 64)
	for i := range specs {
		specs[i] = testSpec(func(s *job.Spec) { s.Args = []string{fmt.Sprint(i)} })
	}
	for b.Loop() {
		if _, err := signSpecBatch(specs, key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(specs))/1e3, "µs/job")
}
