package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestLyingQuotaSaid: every record node says a false quota in its
// many-ticket answers (wire.QuotaTicketManyResponse.Quota, the record
// node's unsigned word) and otherwise keeps the true one, 4. Said too
// high (MaxQuotaSaid), the client's room follows the lie, so it asks for
// more tickets than it may have: it is given 4, the rest of its claims
// end ErrOverQuota, no record node holds more than 4 jobs for it, and
// the jobs refused are left for others (another client claims them at
// once). Said too low (1), another client's room after four tickets is 1
// and not 0: it can still ask, and its fifth job is refused for the true
// quota, not the said one. Either lie changes how much a client asks
// for, never what it may hold.
func TestLyingQuotaSaid(t *testing.T) {
	const quota = 4
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 79,
		Configure: func(_ int, cfg *node.Config) {
			cfg.Claim.RequireTicket = true
			cfg.Credit.Quota.Initial = quota
		}})
	keys := testnet.SubmitJobs(t, f.Project, 16, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	var said atomic.Int64
	clients := []certs.Role{certs.RoleClient}
	for _, nd := range f.Net.Live() {
		svc := nd.Credit()
		for proto, handle := range map[string]overlay.Handler{wire.ProtoQuotaTicketMany: svc.HandleTicketMany, wire.ProtoQuotaTicketManyOwn: svc.HandleTicketManyOwn} {
			nd.Endpoint().Handle(protocol.ID(proto), wire.MaxQuotaFrame+wire.MaxClaimMany*(wire.MaxJobKeyLen+8), clients,
				func(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
					resp, err := handle(ctx, from, body)
					if r, ok := resp.(*wire.QuotaTicketManyResponse); ok {
						r.Quota = said.Load()
					}
					return resp, err
				})
		}
	}
	ctx := context.Background()
	newClient := func(name string) (*agent.Agent, *claimclient.Claimer) {
		t.Helper()
		a, err := f.Net.NewAgent(ctx, certs.RoleClient, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0)
		cl.SetSigner(a.Identity().Key)
		cl.SetTickets(time.Hour)
		return a, cl
	}
	claimMany := func(cl *claimclient.Claimer, ks [][]byte) (won, over [][]byte) {
		t.Helper()
		claims, errs := cl.ClaimMany(ctx, ks, f.Net.PlaceOf(ks[0]), nil)
		for i, err := range errs {
			switch {
			case err == nil && claims[i] != nil:
				won = append(won, ks[i])
			case errors.Is(err, claimclient.ErrOverQuota):
				over = append(over, ks[i])
			default:
				t.Fatalf("job %d: %v", i, err)
			}
		}
		return won, over
	}
	mostHeld := func(a *agent.Agent) int {
		most := 0
		for _, nd := range f.Net.Live() {
			_, held := nd.Credit().Quota(a.Identity().Key.Public().(ed25519.PublicKey))
			most = max(most, held)
		}
		return most
	}

	said.Store(wire.MaxQuotaSaid)
	greedy, cl := newClient("greedy")
	won, over := claimMany(cl, keys[:8])
	if len(won) != quota || len(over) != 8-quota {
		t.Fatalf("told a quota of %d: %d won, %d over quota; want %d and %d", wire.MaxQuotaSaid, len(won), len(over), quota, 8-quota)
	}
	if room := cl.TicketRoom(); room != wire.MaxQuotaSaid-quota {
		t.Errorf("room %d, want the lie less the jobs held, %d (control: the lie reached the client)", room, wire.MaxQuotaSaid-quota)
	}
	if won, over := claimMany(cl, keys[8:16]); len(won) != 0 || len(over) != 8 {
		t.Errorf("asking again past the true quota: %d won, %d over; want 0 and 8", len(won), len(over))
	}
	if n := mostHeld(greedy); n != quota {
		t.Errorf("a record node holds %d jobs for the client told a quota of %d, want %d", n, wire.MaxQuotaSaid, quota)
	}
	_, other := newClient("other")
	if won, _ := claimMany(other, over); len(won) != len(over) {
		t.Errorf("another client won %d of the %d jobs refused for the quota", len(won), len(over))
	}

	said.Store(1)
	modest, cl := newClient("modest")
	if won, _ := claimMany(cl, keys[8:8+quota]); len(won) != quota {
		t.Fatalf("told a quota of 1: %d of %d won", len(won), quota)
	}
	if room := cl.TicketRoom(); room != 1 {
		t.Errorf("room %d told a quota of 1 while holding %d, want 1", room, quota)
	}
	if won, over := claimMany(cl, keys[8+quota:9+quota]); len(won) != 0 || len(over) != 1 {
		t.Errorf("a fifth job: %d won, %d over quota; want 0 and 1", len(won), len(over))
	}
	if n := mostHeld(modest); n != quota {
		t.Errorf("a record node holds %d jobs for the client told a quota of 1, want %d", n, quota)
	}
}
