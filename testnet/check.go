package testnet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// LookupReport is what CheckLookups measured.
type LookupReport struct {
	Nodes         int
	Keys          int
	Lookups       int     // (node, key) pairs looked up
	Exact         int     // lookups whose closest-r equalled the truth
	RPCsPerLookup float64 // FIND_NODE requests per network lookup
	CachedRPCs    int64   // RPCs sent by the second, cached round (want 0)
	Elapsed       time.Duration
}

// ExactRatio is the share of exact lookups.
func (r LookupReport) ExactRatio() float64 {
	if r.Lookups == 0 {
		return 0
	}
	return float64(r.Exact) / float64(r.Lookups)
}

func (r LookupReport) String() string {
	return fmt.Sprintf("%d nodes, %d keys: %d of %d closest-r lookups exact (%.2f%%), %.1f RPCs per lookup, %d RPCs for the cached round, %s",
		r.Nodes, r.Keys, r.Exact, r.Lookups, 100*r.ExactRatio(), r.RPCsPerLookup, r.CachedRPCs, r.Elapsed.Round(time.Millisecond))
}

// CheckLookups looks up keys random keys from every running node, judges
// each closest-r answer against the truth computed from all positions,
// then repeats the round to check that cached lookups send no RPC.
// progress, when set, is called after each node.
func (n *Network) CheckLookups(ctx context.Context, keys int, seed uint64, progress func(done, total int)) (LookupReport, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	ks := make([][]byte, keys)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "check-key-%d-%x", i, rng.Uint64())
	}
	live := n.Live()
	rep := LookupReport{Nodes: len(live), Keys: keys}
	var netLookups, rpcs int64
	for i, nd := range live {
		before := nd.DHT().Stats()
		r := nd.DHT().Replication()
		for _, k := range ks {
			got, err := nd.DHT().ClosestPeers(ctx, k)
			if err != nil {
				return rep, fmt.Errorf("lookup from %s: %w", nd.Name(), err)
			}
			rep.Lookups++
			want := n.TrueClosest(k, r)
			if len(got) == len(want) {
				same := true
				for j := range got {
					same = same && got[j] == want[j]
				}
				if same {
					rep.Exact++
				}
			}
		}
		after := nd.DHT().Stats()
		netLookups += after.Network - before.Network
		rpcs += after.RPCs - before.RPCs
		for _, k := range ks {
			if _, err := nd.DHT().ClosestPeers(ctx, k); err != nil {
				return rep, err
			}
		}
		rep.CachedRPCs += nd.DHT().Stats().RPCs - after.RPCs
		if progress != nil {
			progress(i+1, len(live))
		}
	}
	if netLookups > 0 {
		rep.RPCsPerLookup = float64(rpcs) / float64(netLookups)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}
