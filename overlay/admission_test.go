package overlay

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// t0 is the fixed "now" of the admission tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// detRand is a deterministic random source.
func detRand(seed uint64) io.Reader {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return mrand.NewChaCha8(s)
}

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// account is a certified account key.
type testAccount struct {
	key  ed25519.PrivateKey
	cert *x509.Certificate
}

func newCA(tb testing.TB, seed uint64) *certs.Authority {
	tb.Helper()
	ca, err := certs.NewAuthority("overlay test CA", t0.Add(-48*time.Hour), 10*365*24*time.Hour, detRand(seed))
	if err != nil {
		tb.Fatal(err)
	}
	return ca
}

// newAccount issues a certificate of role valid for [nb, na].
func newAccount(tb testing.TB, ca *certs.Authority, role certs.Role, seed uint64, nb, na time.Time) testAccount {
	tb.Helper()
	key, err := certs.GenerateKey(detRand(seed))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := ca.Issue(certs.IssueRequest{
		PublicKey: key.Public().(ed25519.PublicKey), Role: role, Name: string(role) + "-account",
		NotBefore: nb, NotAfter: na, Rand: detRand(seed + 1000),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return testAccount{key: key, cert: c}
}

func newPeerID(tb testing.TB, seed uint64) peer.ID {
	tb.Helper()
	k, _, err := crypto.GenerateEd25519Key(detRand(seed + 5000))
	if err != nil {
		tb.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// helloFrom is acc's hello for peer p at sequence seq, signed by signer.
func helloFrom(acc testAccount, signer ed25519.PrivateKey, p peer.ID, seq uint64) *wire.Hello {
	sp := certs.SignPosition(signer, certs.Position{PeerID: []byte(p), Seq: seq, IssuedAt: t0})
	return &wire.Hello{Version: wire.HelloVersion, Cert: acc.cert.Raw, Position: sp.Marshal()}
}

func (acc testAccount) hello(p peer.ID, seq uint64) *wire.Hello {
	return helloFrom(acc, acc.key, p, seq)
}

// admFixture is a CA, a clock and an Admission accepting every role.
type admFixture struct {
	ca    *certs.Authority
	clock *fakeClock
	ver   *certs.Verifier
	adm   *Admission
	node  testAccount
	proj  testAccount
	cli   testAccount

	dropMu  sync.Mutex
	dropped []peer.ID
	errs    []error
}

func newAdmFixture(t *testing.T, accept ...certs.Role) *admFixture {
	t.Helper()
	f := &admFixture{ca: newCA(t, 1), clock: &fakeClock{t: t0}}
	f.ver = certs.NewVerifier(f.ca.Cert)
	if accept == nil {
		accept = []certs.Role{certs.RoleNode, certs.RoleProject, certs.RoleClient}
	}
	f.adm = NewAdmission(f.ver, accept, f.clock.Now, nil)
	f.adm.OnDrop(func(p peer.ID, err error) {
		f.dropMu.Lock()
		f.dropped = append(f.dropped, p)
		f.errs = append(f.errs, err)
		f.dropMu.Unlock()
	})
	nb, na := t0.Add(-time.Hour), t0.Add(24*time.Hour)
	f.node = newAccount(t, f.ca, certs.RoleNode, 10, nb, na)
	f.proj = newAccount(t, f.ca, certs.RoleProject, 11, nb, na)
	f.cli = newAccount(t, f.ca, certs.RoleClient, 12, nb, na)
	return f
}

func (f *admFixture) drops() ([]peer.ID, []error) {
	f.dropMu.Lock()
	defer f.dropMu.Unlock()
	return slices.Clone(f.dropped), slices.Clone(f.errs)
}

func (f *admFixture) mustAdmit(t *testing.T, p peer.ID, h *wire.Hello) *Admitted {
	t.Helper()
	adm, err := f.adm.Admit(p, h)
	if err != nil {
		t.Fatalf("Admit(%s): %v", p, err)
	}
	if got, ok := f.adm.Get(p); !ok || got != adm {
		t.Fatalf("Get(%s) after Admit = %v, %v", p, got, ok)
	}
	return adm
}

func TestAdmitTable(t *testing.T) {
	p1 := newPeerID(t, 1)
	p2 := newPeerID(t, 2)
	ca := newCA(t, 1) // the same CA as every fixture's: its key is seeded
	foreign := newAccount(t, newCA(t, 99), certs.RoleNode, 20, t0.Add(-time.Hour), t0.Add(time.Hour))
	expired := newAccount(t, ca, certs.RoleNode, 21, t0.Add(-48*time.Hour), t0.Add(-time.Second))
	early := newAccount(t, ca, certs.RoleNode, 22, t0.Add(time.Hour), t0.Add(48*time.Hour))
	cases := []struct {
		name    string
		accept  []certs.Role
		hello   func(f *admFixture) *wire.Hello
		wantErr error // nil: admitted
		role    certs.Role
	}{
		{"node", nil, func(f *admFixture) *wire.Hello { return f.node.hello(p1, 1) }, nil, certs.RoleNode},
		{"project", nil, func(f *admFixture) *wire.Hello { return f.proj.hello(p1, 1) }, nil, certs.RoleProject},
		{"client", nil, func(f *admFixture) *wire.Hello { return f.cli.hello(p1, 1) }, nil, certs.RoleClient},
		{"client not accepted", []certs.Role{certs.RoleNode}, func(f *admFixture) *wire.Hello {
			return f.cli.hello(p1, 1)
		}, certs.ErrWrongRole, ""},
		{"project not accepted", []certs.Role{certs.RoleNode, certs.RoleClient}, func(f *admFixture) *wire.Hello {
			return f.proj.hello(p1, 1)
		}, certs.ErrWrongRole, ""},
		{"position names another peer", nil, func(f *admFixture) *wire.Hello {
			return f.node.hello(p2, 1)
		}, certs.ErrBadSignature, ""},
		{"position not signed by the certificate key", nil, func(f *admFixture) *wire.Hello {
			return helloFrom(f.node, f.proj.key, p1, 1)
		}, certs.ErrBadSignature, ""},
		{"position garbage", nil, func(f *admFixture) *wire.Hello {
			h := f.node.hello(p1, 1)
			h.Position = []byte("not a position record")
			return h
		}, certs.ErrMalformed, ""},
		{"certificate of another CA", nil, func(f *admFixture) *wire.Hello {
			return foreign.hello(p1, 1)
		}, certs.ErrUnknownIssuer, ""},
		{"expired certificate", nil, func(f *admFixture) *wire.Hello {
			return expired.hello(p1, 1)
		}, certs.ErrExpired, ""},
		{"certificate not yet valid", nil, func(f *admFixture) *wire.Hello {
			return early.hello(p1, 1)
		}, certs.ErrNotYetValid, ""},
		{"wrong hello version", nil, func(f *admFixture) *wire.Hello {
			h := f.node.hello(p1, 1)
			h.Version = wire.HelloVersion + 1
			return h
		}, wire.ErrMalformed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newAdmFixture(t, c.accept...)
			adm, err := f.adm.Admit(p1, c.hello(f))
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Admit = %v, want %v", err, c.wantErr)
				}
				if _, ok := f.adm.Get(p1); ok || f.adm.IsAdmitted(p1) {
					t.Fatal("refused peer is admitted")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := f.adm.Wait(ctx, p1); !errors.Is(err, ErrNotAdmitted) || ctx.Err() != nil {
					t.Fatalf("Wait after refusal = %v (ctx %v), want an immediate ErrNotAdmitted", err, ctx.Err())
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if adm.Peer != p1 || adm.Role() != c.role || adm.Position.Seq != 1 {
				t.Fatalf("admitted %+v as %s", adm, adm.Role())
			}
			if !adm.AccountKey().Equal(adm.Identity.Cert.PublicKey) {
				t.Fatal("account key is not the certificate's")
			}
			if !f.adm.IsAdmitted(p1) || !f.adm.IsAdmitted(p1, c.role) {
				t.Fatal("IsAdmitted false for the admitted role")
			}
			others := slices.DeleteFunc([]certs.Role{certs.RoleNode, certs.RoleProject, certs.RoleClient},
				func(r certs.Role) bool { return r == c.role })
			if f.adm.IsAdmitted(p1, others...) {
				t.Fatalf("IsAdmitted true for roles %v", others)
			}
			if ps := f.adm.Peers(c.role); len(ps) != 1 || ps[0].Peer != p1 {
				t.Fatalf("Peers(%s) = %v", c.role, ps)
			}
			if ps := f.adm.Peers(others...); len(ps) != 0 {
				t.Fatalf("Peers(%v) = %v", others, ps)
			}
			// Check verifies without recording.
			if _, err := f.adm.Check(p2, c.hello(f)); !errors.Is(err, certs.ErrBadSignature) {
				t.Fatalf("Check from another peer = %v", err)
			}
			if _, ok := f.adm.Get(p2); ok {
				t.Fatal("Check recorded a verdict")
			}
		})
	}
}

func TestAdmitSuperseded(t *testing.T) {
	f := newAdmFixture(t)
	p1, p2 := newPeerID(t, 1), newPeerID(t, 2)
	f.mustAdmit(t, p1, f.node.hello(p1, 5))
	// An older position of the same account, from another peer.
	if _, err := f.adm.Admit(p2, f.node.hello(p2, 4)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("older position = %v, want ErrSuperseded", err)
	}
	// The same sequence number reused by another peer.
	if _, err := f.adm.Admit(p2, f.node.hello(p2, 5)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("reused position = %v, want ErrSuperseded", err)
	}
	if _, ok := f.adm.Get(p2); ok {
		t.Fatal("superseded peer admitted")
	}
	if _, ok := f.adm.Get(p1); !ok {
		t.Fatal("holder of the newest position lost admission")
	}
	// The holder may repeat its hello (a reconnect).
	f.mustAdmit(t, p1, f.node.hello(p1, 5))
	// Another account is independent.
	f.mustAdmit(t, p2, f.proj.hello(p2, 1))
	if d, _ := f.drops(); len(d) != 0 {
		t.Fatalf("OnDrop called for %v", d)
	}
}

func TestAdmitNewerPositionDropsOlderPeer(t *testing.T) {
	f := newAdmFixture(t)
	p1, p2, p3 := newPeerID(t, 1), newPeerID(t, 2), newPeerID(t, 3)
	f.mustAdmit(t, p1, f.node.hello(p1, 1))
	f.mustAdmit(t, p3, f.cli.hello(p3, 1))
	f.mustAdmit(t, p2, f.node.hello(p2, 2))
	if _, ok := f.adm.Get(p1); ok {
		t.Fatal("peer of the older position still admitted")
	}
	if _, ok := f.adm.Get(p3); !ok {
		t.Fatal("unrelated peer dropped")
	}
	dropped, errs := f.drops()
	if len(dropped) != 1 || dropped[0] != p1 || !errors.Is(errs[0], ErrSuperseded) {
		t.Fatalf("OnDrop got %v %v, want [%s] ErrSuperseded", dropped, errs, p1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.adm.Wait(ctx, p1); !errors.Is(err, ErrNotAdmitted) || ctx.Err() != nil {
		t.Fatalf("Wait for dropped peer = %v", err)
	}
	// The dropped peer cannot come back with its old position.
	if _, err := f.adm.Admit(p1, f.node.hello(p1, 1)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("old position again = %v, want ErrSuperseded", err)
	}
	if ps := f.adm.Peers(certs.RoleNode); len(ps) != 1 || ps[0].Peer != p2 {
		t.Fatalf("node peers %v, want only %s", ps, p2)
	}
}

func TestWait(t *testing.T) {
	f := newAdmFixture(t)
	p1, p2, p3 := newPeerID(t, 1), newPeerID(t, 2), newPeerID(t, 3)

	// A verdict already in: Wait returns at once (a 10 s context would
	// show as a timeout error).
	f.mustAdmit(t, p1, f.node.hello(p1, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if adm, err := f.adm.Wait(ctx, p1); err != nil || adm.Peer != p1 {
		t.Fatalf("Wait after admission = %v, %v", adm, err)
	}

	// No verdict: the context ends it.
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if _, err := f.adm.Wait(short, p2); !errors.Is(err, ErrNotAdmitted) {
		t.Fatalf("Wait without verdict = %v, want ErrNotAdmitted", err)
	}

	// A waiter is woken by a later verdict, and by a refusal.
	type result struct {
		adm *Admitted
		err error
	}
	wait := func(p peer.ID) chan result {
		ch := make(chan result, 1)
		go func() {
			adm, err := f.adm.Wait(ctx, p)
			ch <- result{adm, err}
		}()
		return ch
	}
	ch := wait(p2)
	f.mustAdmit(t, p2, f.cli.hello(p2, 1))
	if r := <-ch; r.err != nil || r.adm.Peer != p2 {
		t.Fatalf("woken waiter got %v, %v", r.adm, r.err)
	}
	ch = wait(p3)
	refusal := errors.New("no hello in time")
	f.adm.Refuse(p3, refusal)
	if r := <-ch; !errors.Is(r.err, ErrNotAdmitted) || ctx.Err() != nil {
		t.Fatalf("refused waiter got %v", r.err)
	}
	// Refuse does not override an admission.
	f.adm.Refuse(p1, refusal)
	if _, ok := f.adm.Get(p1); !ok {
		t.Fatal("Refuse dropped an admitted peer")
	}
}

func TestGetChecksValidityWindow(t *testing.T) {
	f := newAdmFixture(t)
	p1 := newPeerID(t, 1)
	adm := f.mustAdmit(t, p1, f.node.hello(p1, 1))
	notAfter := adm.Identity.NotAfter
	f.clock.Set(notAfter)
	if _, ok := f.adm.Get(p1); !ok {
		t.Fatal("not admitted at NotAfter itself")
	}
	f.clock.Set(notAfter.Add(time.Second))
	if _, ok := f.adm.Get(p1); ok || f.adm.IsAdmitted(p1) || len(f.adm.Peers()) != 0 {
		t.Fatal("admitted after the certificate expired")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.adm.Wait(ctx, p1); !errors.Is(err, ErrNotAdmitted) || ctx.Err() != nil {
		t.Fatalf("Wait after expiry = %v", err)
	}
	f.clock.Set(adm.Identity.NotBefore.Add(-time.Second))
	if _, ok := f.adm.Get(p1); ok {
		t.Fatal("admitted before NotBefore")
	}
	// Revalidate drops the expired peer for good.
	f.clock.Set(notAfter.Add(time.Second))
	if got := f.adm.Revalidate(); len(got) != 1 || got[0] != p1 {
		t.Fatalf("Revalidate after expiry = %v", got)
	}
	if _, errs := f.drops(); len(errs) != 1 || !errors.Is(errs[0], certs.ErrExpired) {
		t.Fatalf("OnDrop errors %v, want ErrExpired", errs)
	}
	f.clock.Set(t0)
	if _, ok := f.adm.Get(p1); ok {
		t.Fatal("dropped peer admitted again when the clock went back")
	}
}

func TestRevalidateWithCRL(t *testing.T) {
	f := newAdmFixture(t)
	p1, p2, p3 := newPeerID(t, 1), newPeerID(t, 2), newPeerID(t, 3)
	f.mustAdmit(t, p1, f.node.hello(p1, 1))
	f.mustAdmit(t, p2, f.proj.hello(p2, 1))
	f.mustAdmit(t, p3, f.cli.hello(p3, 1))
	f.adm.Refuse(newPeerID(t, 4), errors.New("refused"))
	if got := f.adm.Revalidate(); len(got) != 0 {
		t.Fatalf("Revalidate with nothing revoked dropped %v", got)
	}
	rl, err := f.ca.Revoke(nil, []*big.Int{f.proj.cert.SerialNumber, big.NewInt(77)}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !f.ver.SetRevocationList(rl) {
		t.Fatal("verifier refused the list")
	}
	got := f.adm.Revalidate()
	if len(got) != 1 || got[0] != p2 {
		t.Fatalf("Revalidate dropped %v, want [%s]", got, p2)
	}
	dropped, errs := f.drops()
	if len(dropped) != 1 || dropped[0] != p2 || !errors.Is(errs[0], certs.ErrRevoked) {
		t.Fatalf("OnDrop got %v %v, want [%s] ErrRevoked", dropped, errs, p2)
	}
	if _, ok := f.adm.Get(p2); ok {
		t.Fatal("revoked peer still admitted")
	}
	for _, p := range []peer.ID{p1, p3} {
		if _, ok := f.adm.Get(p); !ok {
			t.Fatalf("%s dropped", p)
		}
	}
	// Idempotent, and the revoked certificate cannot come back.
	if got := f.adm.Revalidate(); len(got) != 0 {
		t.Fatalf("second Revalidate dropped %v", got)
	}
	if _, err := f.adm.Admit(p2, f.proj.hello(p2, 2)); !errors.Is(err, certs.ErrRevoked) {
		t.Fatalf("revoked certificate admitted again: %v", err)
	}
}

func TestBlockExpiresWithClock(t *testing.T) {
	f := newAdmFixture(t)
	p1, p2 := newPeerID(t, 1), newPeerID(t, 2)
	f.adm.Block(p1, t0.Add(time.Minute))
	f.adm.Block(p1, t0.Add(time.Second)) // an earlier end does not shorten it
	if !f.adm.IsBlocked(p1) || f.adm.IsBlocked(p2) {
		t.Fatal("block not in force")
	}
	f.clock.Set(t0.Add(time.Minute - time.Nanosecond))
	if !f.adm.IsBlocked(p1) {
		t.Fatal("block ended early")
	}
	f.clock.Set(t0.Add(time.Minute))
	if f.adm.IsBlocked(p1) {
		t.Fatal("block still in force at its end")
	}
	f.clock.Set(t0)
	if f.adm.IsBlocked(p1) {
		t.Fatal("expired block came back")
	}
}

func TestForget(t *testing.T) {
	f := newAdmFixture(t)
	p1, p2, p3 := newPeerID(t, 1), newPeerID(t, 2), newPeerID(t, 3)
	f.mustAdmit(t, p1, f.node.hello(p1, 1))
	if _, err := f.adm.Admit(p2, f.node.hello(p3, 2)); err == nil {
		t.Fatal("mismatched hello admitted")
	}
	f.adm.Forget(p1)
	f.adm.Forget(p2)
	f.adm.Forget(p3) // unknown: no-op
	if _, ok := f.adm.Get(p1); !ok {
		t.Fatal("Forget dropped an admitted peer")
	}
	// The failed verdict is gone: Wait no longer answers at once.
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := f.adm.Wait(short, p2)
	if !errors.Is(err, ErrNotAdmitted) || short.Err() == nil {
		t.Fatalf("Wait after Forget = %v (ctx %v), want a timeout", err, short.Err())
	}
	// p2 may now try again.
	f.mustAdmit(t, p2, f.proj.hello(p2, 1))
}

func TestBlocklistGater(t *testing.T) {
	clock := &fakeClock{t: t0}
	b := NewBlocklist(clock.Now)
	p1, p2 := newPeerID(t, 1), newPeerID(t, 2)
	b.Block(p1, t0.Add(time.Minute))
	if b.InterceptPeerDial(p1) || b.InterceptAddrDial(p1, nil) || b.InterceptSecured(0, p1, nil) {
		t.Fatal("blocked peer let through")
	}
	if !b.InterceptPeerDial(p2) || !b.InterceptAddrDial(p2, nil) || !b.InterceptSecured(0, p2, nil) {
		t.Fatal("unblocked peer refused")
	}
	if !b.InterceptAccept(nil) {
		t.Fatal("InterceptAccept refused before the peer is known")
	}
	if ok, _ := b.InterceptUpgraded(nil); !ok {
		t.Fatal("InterceptUpgraded refused")
	}
	clock.Set(t0.Add(time.Minute))
	if !b.InterceptPeerDial(p1) || !b.InterceptSecured(0, p1, nil) {
		t.Fatal("block outlived its end")
	}
	// Admission shares the list it is given.
	adm := NewAdmission(certs.NewVerifier(nil), nil, clock.Now, b)
	adm.Block(p2, clock.Now().Add(time.Hour))
	if !b.IsBlocked(p2) || b.InterceptPeerDial(p2) {
		t.Fatal("Admission.Block not seen by the gater")
	}
	// A nil clock reads the real time.
	wall := NewBlocklist(nil)
	wall.Block(p1, time.Now().Add(time.Hour))
	if !wall.IsBlocked(p1) {
		t.Fatal("real-time block not in force")
	}
}
