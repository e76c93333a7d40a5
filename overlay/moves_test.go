package overlay

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// helloAt is acc's hello for peer p at sequence seq, issued at issued.
func (acc testAccount) helloAt(p peer.ID, seq uint64, issued time.Time) *wire.Hello {
	sp := certs.SignPosition(acc.key, certs.Position{PeerID: []byte(p), Seq: seq, IssuedAt: issued})
	return &wire.Hello{Version: wire.HelloVersion, Cert: acc.cert.Raw, Position: sp.Marshal()}
}

// TestMovesRateLimited: an account's newer position within the minimum
// move interval of its last one is refused and the old peer keeps its
// admission; after the interval the move is taken; a record dated beyond
// the allowed clock skew is refused, so pre-dating cannot dodge the limit.
func TestMovesRateLimited(t *testing.T) {
	f := newAdmFixture(t)
	minMove := MaxClockSkew + 10*time.Minute // beyond the skew, so a record within it can still be too soon
	f.adm.SetMinMove(minMove)
	p1, p2, p3, p4 := newPeerID(t, 1), newPeerID(t, 2), newPeerID(t, 3), newPeerID(t, 4)
	f.mustAdmit(t, p1, f.node.helloAt(p1, 1, t0))

	f.clock.Set(t0.Add(time.Minute))
	if _, err := f.adm.Admit(p2, f.node.helloAt(p2, 2, t0.Add(time.Minute))); !errors.Is(err, ErrMovedTooSoon) {
		t.Fatalf("move after 1 min = %v, want ErrMovedTooSoon", err)
	}
	if _, ok := f.adm.Get(p1); !ok {
		t.Fatal("the refused move cost the old position its admission")
	}

	// Pre-dated by two hours: refused as future-dated, whatever the interval.
	if _, err := f.adm.Admit(p3, f.node.helloAt(p3, 2, t0.Add(2*time.Hour))); !errors.Is(err, ErrFutureDated) {
		t.Fatalf("record an hour ahead = %v, want ErrFutureDated", err)
	}
	// Within the skew is fine (still too soon here).
	if _, err := f.adm.Admit(p3, f.node.helloAt(p3, 2, t0.Add(time.Minute+MaxClockSkew))); !errors.Is(err, ErrMovedTooSoon) {
		t.Fatalf("record within the skew = %v, want ErrMovedTooSoon", err)
	}

	f.clock.Set(t0.Add(minMove + time.Minute))
	f.mustAdmit(t, p4, f.node.helloAt(p4, 2, t0.Add(minMove+time.Minute)))
	if _, ok := f.adm.Get(p1); ok {
		t.Fatal("the old position kept its admission after the move")
	}
	if d, _ := f.drops(); len(d) != 1 || d[0] != p1 {
		t.Fatalf("dropped %v, want [%s]", d, p1)
	}
}
