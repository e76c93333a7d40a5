package claimnet_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// holdersByDistance returns the job's holders, nearest first.
func (cn *claimNet) holdersByDistance(key []byte) []*node.Node {
	byID := map[peer.ID]*node.Node{}
	var ids []peer.ID
	for _, i := range cn.net.Holders(key) {
		nd := cn.net.Node(i)
		byID[nd.ID()] = nd
		ids = append(ids, nd.ID())
	}
	dht.SortPeers(keyspace.KeyPos(key), ids)
	out := make([]*node.Node, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out
}

// denyAll makes a node deny every claim request, with a reply it signs
// properly (a faulty replica, not a forger), and refuse every confirm.
func denyAll(nd *node.Node) {
	id, ep := nd.Identity(), nd.Endpoint()
	clients := []certs.Role{certs.RoleClient}
	ep.Handle(wire.ProtoClaim, 1024, clients, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ClaimRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, err
		}
		signed, err := claim.Sign(claim.Statement{Kind: claim.Denied, Job: req.Job, Client: []byte(from.Identity.PublicKey),
			Node: []byte(ep.ID()), At: time.Now().UnixMilli()}, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
		if err != nil {
			return nil, err
		}
		return &wire.ClaimResponse{Reply: signed}, nil
	})
	ep.Handle(wire.ProtoConfirm, 1<<20, clients, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, errors.New("denied"))
	})
}

// blackhole makes a node take claim requests and confirms and never answer.
func blackhole(nd *node.Node) {
	clients := []certs.Role{certs.RoleClient}
	for _, proto := range []string{wire.ProtoClaim, wire.ProtoConfirm} {
		nd.Endpoint().Handle(protocol.ID(proto), 1<<20, clients, func(ctx context.Context, _ *overlay.Admitted, _ []byte) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
}

// TestClaimPastADenyingReplica: one of each job's five replicas denies
// every claim (nearest, middle or farthest). Clients racing for the job
// still get it claimed, exactly once: one winner, whose claim a quorum of
// the honest replicas holds, and no replica holds another client's.
func TestClaimPastADenyingReplica(t *testing.T) {
	ctx := context.Background()
	q := claim.Quorum(5)
	for round := range 3 {
		cn := startClaimNet(t, 8, 1, 71+uint64(round)) // one denier per network
		key := cn.keys[0]
		hs := cn.holdersByDistance(key)
		if len(hs) != 5 {
			t.Fatalf("job %d held by %d nodes, want 5", round, len(hs))
		}
		bad := hs[[]int{0, 2, 4}[round]]
		denyAll(bad)
		var mu sync.Mutex
		var winners []string
		var wg sync.WaitGroup
		for c := range 4 {
			a, cl := cn.client(t, fmt.Sprintf("d%d-%d", round, c))
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A lost race is retried, as a client's next index query would.
				for range 3 {
					_, err := cl.Claim(ctx, key)
					if err == nil {
						mu.Lock()
						winners = append(winners, a.Identity().Name)
						mu.Unlock()
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("job %d, denier %s: %d winners %v, want 1", round, bad.Name(), len(winners), winners)
		}
		var owner []byte
		held := 0
		for _, nd := range hs {
			st, _ := nd.Pool().State(key)
			if nd == bad || st.Phase != job.Claimed {
				continue
			}
			if owner != nil && string(owner) != string(st.Client) {
				t.Fatalf("job %d: replicas hold claims of two clients", round)
			}
			owner = st.Client
			held++
		}
		if held < q-1 {
			t.Fatalf("job %d: %d honest replicas hold the claim, want at least %d", round, held, q-1)
		}
	}
}

// TestClaimPastABlackholedReplica: one of the job's replicas takes claim
// requests and never answers. The claim routes around it after a per-node
// timeout and completes within a few seconds, not when the silent node's
// connection gives up.
func TestClaimPastABlackholedReplica(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 72)
	key := cn.keys[0]
	hs := cn.holdersByDistance(key)
	blackhole(hs[1])
	_, cl := cn.client(t, "w")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	if _, err := cl.Claim(ctx, key); err != nil {
		t.Fatalf("claim with a blackholed replica: %v (after %v)", err, time.Since(t0))
	}
	if el := time.Since(t0); el > 5*time.Second {
		t.Fatalf("claim took %v, want a few seconds", el)
	}
}
