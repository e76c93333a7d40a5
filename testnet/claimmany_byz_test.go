package testnet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
)

// TestClaimManyByzantine: the jobs of a batch claimed several at once
// (claimclient.ClaimMany) by two racing clients, over the place's five
// replicas of which one denies every job (the adversarial runs' "deny",
// many-job requests included) and one runs its clock 5 minutes ahead:
// with f = 1 lying, every job is won by exactly one client, recorded on
// the honest replicas. With two replicas denying (beyond f) no job is
// won — the control: the lying replica is what the quorum tolerates.
func TestClaimManyByzantine(t *testing.T) {
	for _, tc := range []struct {
		deny []int // ranks, nearest the place first
		won  bool
	}{{[]int{0}, true}, {[]int{0, 2}, false}} {
		t.Run(fmt.Sprint(len(tc.deny), " lying"), func(t *testing.T) {
			f := StartFixture(t, nil, Options{Nodes: 5, Seed: 96})
			keys := SubmitJobs(t, f.Project, 6, Jobs{Batch: true})
			place := f.Net.PlaceOf(keys[0])
			ranked := make([]peer.ID, 0, 5)
			for _, nd := range f.Net.Live() {
				ranked = append(ranked, nd.ID())
			}
			dht.SortPeers(keyspace.KeyPos(place), ranked)
			for _, k := range tc.deny {
				denyClaims(f.Net.Node(f.Net.Index(ranked[k])), f.Clock.Now)
			}
			f.Net.SetClockOffset(f.Net.Index(ranked[1]), 5*time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var mu sync.Mutex
			winners := map[string][]string{}
			var wg sync.WaitGroup
			for c := range 2 {
				a, err := f.Net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("racer%d", c))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { a.Close() })
				cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), f.Clock.Now, 0)
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs := cl.ClaimMany(ctx, keys, place, nil)
					mu.Lock()
					defer mu.Unlock()
					for i, err := range errs {
						switch {
						case err == nil:
							winners[string(keys[i])] = append(winners[string(keys[i])], a.Identity().Name)
						case !errors.Is(err, claimclient.ErrLost) && !errors.Is(err, claimclient.ErrNoQuorum):
							t.Errorf("job %d: %v", i, err)
						}
					}
				}()
			}
			wg.Wait()
			for i, k := range keys {
				w := winners[string(k)]
				switch {
				case len(w) > 1:
					t.Errorf("job %d won by %v", i, w)
				case tc.won && len(w) != 1:
					t.Errorf("job %d won by none with one lying replica", i)
				case !tc.won && len(w) != 0:
					t.Errorf("job %d won by %v with two replicas denying", i, w)
				}
			}
			for k, n := range ClaimedTwice(f.Net.ClaimLogs()...) {
				t.Errorf("job %x permanently claimed by %d clients", k, n)
			}
			if tc.won {
				honest := 0
				for _, k := range keys {
					for _, i := range f.Net.Holders(k) {
						if st, _ := f.Net.Node(i).Pool().State(k); st.Phase == job.Claimed {
							honest++
						}
					}
				}
				if honest < len(keys)*3 {
					t.Errorf("%d replica claims for %d jobs; want a quorum's on each", honest, len(keys))
				}
			}
		})
	}
}
