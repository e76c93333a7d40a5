package project

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/wire"
)

// heldBy asks each job's r nearest nodes the project knows of (routing
// table and crawled view) whether they hold it, with one /up/job/get per
// node and up to wire.MaxJobsPerStore jobs (and 4 MiB of them), nodes in
// parallel (at most fetchConcurrency at once), and returns per job how
// many hold it: a node counts when it sends the job back byte for byte. A
// node that does not answer counts as not holding its jobs, so a job is
// sent again rather than lost.
//
// It is what a re-run of a submission asks before sending what the ledger
// has as not acknowledged: a submission killed after its jobs were placed
// but before the acknowledgements were recorded finds them held and sends
// none of them again (a store costs the first node r placements and the
// index its listing writes; a get is a read).
func (p *Project) heldBy(ctx context.Context, jobs []*Prepared) []int {
	held := make([]int, len(jobs))
	r := p.a.DHT().Replication()
	byNode := map[peer.ID][]int{}
	for i, j := range jobs {
		n := 0
		for _, c := range p.a.DHT().NearestKnown(keyspace.KeyPos(j.PlaceKey()), 2*r) {
			if n == r {
				break
			}
			if c == p.a.Endpoint().ID() || p.a.DHT().IsMarkedDead(c) {
				continue
			}
			byNode[c] = append(byNode[c], i)
			n++
		}
	}
	var mu sync.Mutex
	eachNode(byNode, func(n peer.ID, idx []int) {
		for len(idx) > 0 && ctx.Err() == nil {
			cut, size := 0, 0
			for cut < len(idx) && cut < wire.MaxJobsPerStore && size < 4<<20 {
				size += len(jobs[idx[cut]].Encode()) + 64
				cut++
			}
			part := idx[:cut]
			idx = idx[cut:]
			req := &wire.GetRequest{}
			want := make(map[string]int, len(part))
			for _, i := range part {
				req.Keys = append(req.Keys, jobs[i].Key())
				want[string(jobs[i].Encode())] = i
			}
			var resp wire.GetResponse
			if err := p.a.Endpoint().Call(ctx, n, wire.ProtoJobGet, req, wire.MaxJobFrame, &resp); err != nil {
				continue
			}
			mu.Lock()
			for _, env := range resp.Jobs {
				if i, ok := want[string(env.Signed)]; ok {
					held[i]++
					delete(want, string(env.Signed)) // each node once
				}
			}
			mu.Unlock()
		}
	})
	return held
}
