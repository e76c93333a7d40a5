package overlay

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// ErrNotAdmitted reports a peer that has not proven a valid certificate.
var ErrNotAdmitted = errors.New("peer not admitted")

// ErrSuperseded reports a position record older than one already seen for
// the same account.
var ErrSuperseded = errors.New("position superseded by a newer one")

// Admitted is what a peer proved in its hello.
type Admitted struct {
	Peer     peer.ID
	Identity *certs.Identity
	Position certs.Position
}

// Role is the admitted peer's certificate role.
func (a *Admitted) Role() certs.Role { return a.Identity.Role }

// verdict is the admission state of one peer: pending until done is closed.
type verdict struct {
	done     chan struct{}
	admitted *Admitted
	err      error
}

// account is the newest position seen for one account key.
type account struct {
	seq    uint64
	peer   peer.ID
	issued time.Time
}

// ErrMovedTooSoon reports a new position of an account issued too soon
// after its previous one: moves are rate-limited per account, so a
// certificate holder cannot grind its way around the keyspace.
var ErrMovedTooSoon = errors.New("account moved again too soon")

// ErrFutureDated reports a position record issued later than the local
// clock allows: pre-dating records would let an account move past the
// minimum move interval.
var ErrFutureDated = errors.New("position record dated in the future")

// MaxClockSkew is how far a position record's IssuedAt may lie ahead of
// the local clock: T_skew, how far two honest clocks may disagree (20 min,
// claim.DefaultTSkew; a test in node keeps the two equal). A node whose
// clock is further ahead is refused until it is corrected: a fault.
const MaxClockSkew = 20 * time.Minute

// Admission decides which peers are admitted. It is safe for concurrent
// use. Verification is pure given the verifier and the time passed in; the
// hello protocol and the gate feed it.
type Admission struct {
	verifier *certs.Verifier
	accept   []certs.Role
	now      func() time.Time
	minMove  time.Duration

	mu       sync.Mutex
	peers    map[peer.ID]*verdict
	accounts map[string]account // by account public key
	blocked  *Blocklist
	onDrop   []func(peer.ID, error)
}

// NewAdmission returns an Admission that verifies against verifier, admits
// the given roles, and reads the time from now.
func NewAdmission(verifier *certs.Verifier, accept []certs.Role, now func() time.Time, blocked *Blocklist) *Admission {
	if blocked == nil {
		blocked = NewBlocklist(now)
	}
	return &Admission{
		verifier: verifier,
		accept:   slices.Clone(accept),
		now:      now,
		peers:    make(map[peer.ID]*verdict),
		accounts: make(map[string]account),
		blocked:  blocked,
	}
}

// SetMinMove sets the least time between two positions of one account.
func (a *Admission) SetMinMove(d time.Duration) {
	a.mu.Lock()
	a.minMove = d
	a.mu.Unlock()
}

// Verifier is the certificate verifier admission uses.
func (a *Admission) Verifier() *certs.Verifier { return a.verifier }

// OnDrop registers f to be called (outside the lock) whenever an admitted
// peer loses admission: revoked, expired, or superseded by a newer position.
func (a *Admission) OnDrop(f func(peer.ID, error)) {
	a.mu.Lock()
	a.onDrop = append(a.onDrop, f)
	a.mu.Unlock()
}

// Check verifies hello as sent by peer p at the current time, without
// recording anything.
func (a *Admission) Check(p peer.ID, hello *wire.Hello) (*Admitted, error) {
	if err := hello.Validate(); err != nil {
		return nil, err
	}
	now := a.now()
	id, err := a.verifier.VerifyCert(hello.Cert, now, a.accept...)
	if err != nil {
		return nil, fmt.Errorf("certificate of %s: %w", p, err)
	}
	sp, err := certs.UnmarshalSignedPosition(hello.Position)
	if err != nil {
		return nil, fmt.Errorf("position record of %s: %w", p, err)
	}
	if err := sp.Verify(id.PublicKey); err != nil {
		return nil, fmt.Errorf("position record of %s not signed by its certificate key: %w", p, err)
	}
	if ahead := sp.Position.IssuedAt.Sub(now); ahead > MaxClockSkew {
		return nil, fmt.Errorf("position record of %s issued %s ahead of this clock (at most %s): %w", p, ahead, MaxClockSkew, ErrFutureDated)
	}
	if string(sp.Position.PeerID) != string(p) {
		return nil, fmt.Errorf("position record names peer %s, connection is from %s: %w",
			peerIDString(sp.Position.PeerID), p, certs.ErrBadSignature)
	}
	return &Admitted{Peer: p, Identity: id, Position: sp.Position}, nil
}

func peerIDString(b []byte) string {
	id, err := peer.IDFromBytes(b)
	if err != nil {
		return fmt.Sprintf("<invalid %d bytes>", len(b))
	}
	return id.String()
}

// Admit verifies hello from p and records the verdict. A newer position of
// the same account drops the peer holding the older one.
func (a *Admission) Admit(p peer.ID, hello *wire.Hello) (*Admitted, error) {
	adm, err := a.Check(p, hello)
	var dropped []peer.ID
	a.mu.Lock()
	if err == nil && a.verifier.IsRevoked(adm.Identity.Serial) {
		// A revocation list adopted since Check: Revalidate skipped this
		// peer, its verdict being pending.
		err = fmt.Errorf("certificate %s of %s revoked: %w", adm.Identity.Serial.Text(16), p, certs.ErrRevoked)
	}
	if err == nil {
		key := string(adm.Identity.PublicKey)
		acc, seen := a.accounts[key]
		switch {
		case seen && acc.seq > adm.Position.Seq:
			err = fmt.Errorf("peer %s holds position %d of account %q, newer is %d at %s: %w",
				p, adm.Position.Seq, adm.Identity.Name, acc.seq, acc.peer, ErrSuperseded)
		case seen && acc.seq == adm.Position.Seq && acc.peer != p:
			err = fmt.Errorf("peer %s reuses position %d of account %q held by %s: %w",
				p, acc.seq, adm.Identity.Name, acc.peer, ErrSuperseded)
		case seen && acc.seq < adm.Position.Seq && adm.Position.IssuedAt.Sub(acc.issued) < a.minMove:
			err = fmt.Errorf("account %q moved to %s %s after its last move (minimum %s): %w",
				adm.Identity.Name, p, adm.Position.IssuedAt.Sub(acc.issued), a.minMove, ErrMovedTooSoon)
		default:
			if seen && acc.peer != p {
				dropped = append(dropped, acc.peer)
			}
			if old := a.peers[p]; old != nil && isDone(old.done) && old.err == nil {
				if oldKey := string(old.admitted.Identity.PublicKey); oldKey != key && a.accounts[oldKey].peer == p {
					delete(a.accounts, oldKey) // p now speaks for another account
				}
			}
			a.accounts[key] = account{seq: adm.Position.Seq, peer: p, issued: adm.Position.IssuedAt}
		}
	}
	a.settleLocked(p, adm, err)
	for _, old := range dropped {
		a.settleLocked(old, nil, fmt.Errorf("account %q moved to %s: %w", adm.Identity.Name, p, ErrSuperseded))
	}
	hooks := slices.Clone(a.onDrop)
	a.mu.Unlock()
	for _, old := range dropped {
		for _, f := range hooks {
			f(old, ErrSuperseded)
		}
	}
	return adm, err
}

// settleLocked records the verdict for p, waking anyone waiting on it.
func (a *Admission) settleLocked(p peer.ID, adm *Admitted, err error) {
	v := a.peers[p]
	if v == nil || isDone(v.done) {
		v = &verdict{done: make(chan struct{})}
		a.peers[p] = v
	}
	v.admitted, v.err = adm, err
	close(v.done)
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Get returns p's admission if it is admitted now; it re-checks the
// certificate's validity window against the current time.
func (a *Admission) Get(p peer.ID) (*Admitted, bool) {
	a.mu.Lock()
	v := a.peers[p]
	a.mu.Unlock()
	if v == nil || !isDone(v.done) || v.err != nil {
		return nil, false
	}
	now := a.now()
	if now.After(v.admitted.Identity.NotAfter) || now.Before(v.admitted.Identity.NotBefore) {
		return nil, false
	}
	return v.admitted, true
}

// IsAdmitted reports whether p is admitted with one of roles (any role when
// roles is empty).
func (a *Admission) IsAdmitted(p peer.ID, roles ...certs.Role) bool {
	adm, ok := a.Get(p)
	if !ok {
		return false
	}
	return len(roles) == 0 || slices.Contains(roles, adm.Role())
}

// Wait blocks until p has a verdict or ctx ends, and returns it.
func (a *Admission) Wait(ctx context.Context, p peer.ID) (*Admitted, error) {
	a.mu.Lock()
	v := a.peers[p]
	if v == nil {
		v = &verdict{done: make(chan struct{})}
		a.peers[p] = v
	}
	a.mu.Unlock()
	if !isDone(v.done) {
		select {
		case <-v.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("peer %s sent no hello: %w", p, ErrNotAdmitted)
		}
	}
	if v.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAdmitted, v.err)
	}
	if adm, ok := a.Get(p); ok {
		return adm, nil
	}
	return nil, fmt.Errorf("peer %s certificate outside its validity window: %w", p, ErrNotAdmitted)
}

// Forget clears p's verdict (its connection is gone) unless it is admitted:
// admitted peers stay admitted across reconnects.
func (a *Admission) Forget(p peer.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v := a.peers[p]; v != nil && !isDone(v.done) {
		return // someone waits; the hello timeout settles it
	}
	if v := a.peers[p]; v != nil && v.err != nil {
		delete(a.peers, p)
	}
}

// Block refuses connections from and to p until the given time.
func (a *Admission) Block(p peer.ID, until time.Time) { a.blocked.Block(p, until) }

// IsBlocked reports whether p is blocked now.
func (a *Admission) IsBlocked(p peer.ID) bool { return a.blocked.IsBlocked(p) }

// Refuse records a failed admission for p (no valid hello in time).
func (a *Admission) Refuse(p peer.ID, err error) {
	a.mu.Lock()
	if v := a.peers[p]; v == nil || !isDone(v.done) || v.err != nil {
		a.settleLocked(p, nil, err)
	}
	a.mu.Unlock()
}

// Revalidate re-checks every admitted peer against the verifier's current
// revocation list and the current time, drops those that fail, and returns
// them.
func (a *Admission) Revalidate() []peer.ID {
	now := a.now()
	var dropped []peer.ID
	var errs []error
	a.mu.Lock()
	for p, v := range a.peers {
		if !isDone(v.done) || v.err != nil {
			continue
		}
		id := v.admitted.Identity
		var err error
		switch {
		case a.verifier.IsRevoked(id.Serial):
			err = fmt.Errorf("certificate %s of %s revoked: %w", id.Serial.Text(16), p, certs.ErrRevoked)
		case now.After(id.NotAfter):
			err = fmt.Errorf("certificate of %s expired at %s: %w", p, id.NotAfter.UTC().Format(time.RFC3339), certs.ErrExpired)
		default:
			continue
		}
		a.settleLocked(p, nil, err)
		dropped = append(dropped, p)
		errs = append(errs, err)
	}
	hooks := slices.Clone(a.onDrop)
	a.mu.Unlock()
	for i, p := range dropped {
		for _, f := range hooks {
			f(p, errs[i])
		}
	}
	return dropped
}

// Peers returns the admitted peers with one of roles (all when empty).
func (a *Admission) Peers(roles ...certs.Role) []*Admitted {
	a.mu.Lock()
	ids := make([]peer.ID, 0, len(a.peers))
	for p := range a.peers {
		ids = append(ids, p)
	}
	a.mu.Unlock()
	var out []*Admitted
	for _, p := range ids {
		if adm, ok := a.Get(p); ok && (len(roles) == 0 || slices.Contains(roles, adm.Role())) {
			out = append(out, adm)
		}
	}
	return out
}

// AccountKey is the account public key of an admitted peer.
func (a *Admitted) AccountKey() ed25519.PublicKey { return a.Identity.PublicKey }
