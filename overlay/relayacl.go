package overlay

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
)

// AdmittedRelayACL is the relay service's access list: only a certified
// U.P. node may reserve a slot (to be reached through this relay), and
// only admitted parties may be relayed, to an admitted node. A volunteer
// thus relays for the pool, not for any libp2p peer that finds it. The
// host is built before the endpoint whose admission it consults, so Bind
// comes later; until then (and for a peer whose hello does not arrive
// within Wait) everything is refused. Safe for concurrent use.
type AdmittedRelayACL struct {
	// Wait is how long a request waits for the peer's hello to end, which
	// runs on the same new connection (default 10 s, the hello timeout).
	Wait time.Duration
	adm  atomic.Pointer[Admission]
}

// Bind makes the list consult adm.
func (a *AdmittedRelayACL) Bind(adm *Admission) { a.adm.Store(adm) }

// AllowReserve lets a node that is admitted reserve a relay slot.
func (a *AdmittedRelayACL) AllowReserve(p peer.ID, _ multiaddr.Multiaddr) bool {
	return a.admitted(p, certs.RoleNode)
}

// AllowConnect relays src to dest when both are admitted, dest as a node.
func (a *AdmittedRelayACL) AllowConnect(src peer.ID, _ multiaddr.Multiaddr, dest peer.ID) bool {
	return a.admitted(src) && a.admitted(dest, certs.RoleNode)
}

// admitted waits for p's verdict, at most Wait, and reports whether p is
// admitted with one of roles (any when none).
func (a *AdmittedRelayACL) admitted(p peer.ID, roles ...certs.Role) bool {
	adm := a.adm.Load()
	if adm == nil {
		return false
	}
	wait := a.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := adm.Wait(ctx, p); err != nil {
		return false
	}
	return adm.IsAdmitted(p, roles...)
}
