package project

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// fetchConcurrency bounds the nodes a harvest fetches results from at once.
const fetchConcurrency = 8

// eachNode runs f for every node's jobs, at most fetchConcurrency nodes
// at once, and returns when all are done.
func eachNode(byNode map[peer.ID][]int, f func(n peer.ID, idx []int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchConcurrency)
	for n, idx := range byNode {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				<-sem
				wg.Done()
			}()
			f(n, idx)
		}()
	}
	wg.Wait()
}

// fetched is what fetching one job's result came to.
type fetched struct {
	res     *Result // nil when not fetched
	refused []error // copies single nodes sent that did not open or verify, each naming its node
	err     error   // why no good copy came
	// evidence is what the job's closest nodes said when none served a
	// good copy (nil when they could not be looked up, or the fetch was
	// interrupted): what a harvest judges a loss by (lossEvidence).
	evidence *lossEvidence
}

// fetchResults gets the results of jobs: each job is asked first of its
// first listed replica, in one ResultGet per node (nodes in parallel, at
// most fetchConcurrency at once); a job whose copy is missing there, or
// refused, goes on to fetchOne (its other listed replicas one by one,
// then its closest nodes).
func (p *Project) fetchResults(ctx context.Context, jobs []found) []fetched {
	jobs = slices.Clone(jobs) // replicas are trimmed of nodes that sent forged copies
	out := make([]fetched, len(jobs))
	traces := make([]fetchTrace, len(jobs))
	byNode := map[peer.ID][]int{}
	var rest []int
	for i, f := range jobs {
		traces[i].said = map[peer.ID]nodeSaid{}
		if len(f.replicas) == 0 {
			rest = append(rest, i)
			continue
		}
		byNode[f.replicas[0]] = append(byNode[f.replicas[0]], i)
	}
	o := p.opener()
	var mu sync.Mutex
	opened := make([]*unsealed, len(jobs)) // copies whose signatures are left to check, and from which node
	from := make([]peer.ID, len(jobs))
	eachNode(byNode, func(n peer.ID, idx []int) {
		for start := 0; start < len(idx); start += wire.MaxJobsPerStore {
			part := idx[start:min(start+wire.MaxJobsPerStore, len(idx))]
			req := &wire.ResultGetRequest{}
			for _, i := range part {
				req.Keys = append(req.Keys, jobs[i].key)
			}
			var resp wire.ResultGetResponse
			err := p.a.Endpoint().Call(ctx, n, wire.ProtoResultGet, req, wire.MaxResultsFrame, &resp)
			var retry []int
			for j, i := range part {
				if err == nil {
					traces[i].said[n] = saidBy(resp.States, jobs[i].key) // each job is one node's to fill
				}
				if err != nil || j >= len(resp.Results) || len(resp.Results[j]) == 0 {
					retry = append(retry, i) // this node again among the others: it may have left it out for size
					continue
				}
				u, oerr := o.unseal(resp.Results[j], jobs[i].key)
				if oerr != nil {
					traces[i].refused = append(traces[i].refused, fmt.Errorf("copy from node %s refused: %w", n, oerr))
					jobs[i].replicas = jobs[i].replicas[1:]
					retry = append(retry, i)
					continue
				}
				opened[i], from[i] = u, n
			}
			mu.Lock()
			rest = append(rest, retry...)
			mu.Unlock()
		}
	})
	// The signatures of every copy fetched, in one batch.
	var batch []*unsealed
	var of []int
	for i, u := range opened {
		if u != nil {
			batch = append(batch, u)
			of = append(of, i)
		}
	}
	for k, err := range verifySigs(batch) {
		i := of[k]
		if err != nil {
			traces[i].refused = append(traces[i].refused, fmt.Errorf("copy from node %s refused: %w", from[i], err))
			jobs[i].replicas = jobs[i].replicas[1:]
			rest = append(rest, i)
			continue
		}
		out[i] = fetched{res: batch[k].toResult(), refused: traces[i].refused}
	}
	for _, i := range rest {
		if ctx.Err() != nil {
			out[i] = fetched{refused: traces[i].refused, err: ctx.Err()}
			continue
		}
		out[i] = p.fetchOne(ctx, o, jobs[i], &traces[i])
	}
	return out
}

// fetchOne gets a job's result from the replicas its index entry lists,
// then, when none served a good copy, from the job's closest nodes (a
// lookup), not asking again a node that answered already. The entry's
// replicas are an index node's word; the closest nodes are the project's
// own lookup, and what they say of the job is the evidence a loss is
// judged by. tr holds what the nodes asked before said.
func (p *Project) fetchOne(ctx context.Context, o *opener, f found, tr *fetchTrace) fetched {
	var hintErr error
	if len(f.replicas) > 0 {
		r, err := p.fetchResult(ctx, o, f.key, f.replicas, tr, false)
		if err == nil {
			return fetched{res: r, refused: tr.refused}
		}
		if ctx.Err() != nil {
			return fetched{refused: tr.refused, err: err}
		}
		hintErr = err
	} else if len(tr.refused) > 0 {
		hintErr = fmt.Errorf("no good result from any listed node: %w", errors.Join(tr.refused...))
	}
	closest, err := p.a.DHT().ClosestPeers(dht.WithPurpose(ctx, dht.PurposeHarvest), f.placeKey())
	if err != nil {
		err = fmt.Errorf("find its nodes: %w", err)
		if hintErr != nil {
			err = fmt.Errorf("%w; %w", hintErr, err)
		}
		return fetched{refused: tr.refused, err: err}
	}
	r, err := p.fetchResult(ctx, o, f.key, closest, tr, true)
	if err == nil {
		return fetched{res: r, refused: tr.refused}
	}
	if hintErr != nil {
		err = fmt.Errorf("%w; its closest nodes: %w", hintErr, err)
	}
	out := fetched{refused: tr.refused, err: err}
	if ctx.Err() == nil {
		ev := tr.evidence(closest)
		out.evidence = &ev
	}
	return out
}

// fetchResult gets a job's result from nodes and opens it. A copy that
// does not open or verify (a node altered it, or sent another job's) is
// refused and the next node asked; tr.refused lists those copies, each
// naming its node, also when a good copy was found, and tr.said what each
// node answered. With skipAnswered, a node that answered before (in tr)
// is not asked again. err wraps result.ErrForged when every copy was
// forged.
func (p *Project) fetchResult(ctx context.Context, o *opener, key []byte, nodes []peer.ID, tr *fetchTrace, skipAnswered bool) (*Result, error) {
	var errs []error
	for _, n := range nodes {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if prev, ok := tr.said[n]; skipAnswered && ok && prev.answered {
			continue
		}
		var resp wire.ResultGetResponse
		err := p.a.Endpoint().Call(ctx, n, wire.ProtoResultGet, &wire.ResultGetRequest{Keys: [][]byte{key}}, wire.MaxResultsFrame, &resp)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
			continue
		}
		tr.said[n] = saidBy(resp.States, key)
		if len(resp.Results) != 1 || len(resp.Results[0]) == 0 {
			errs = append(errs, fmt.Errorf("node %s has no result", n))
			continue
		}
		r, err := o.open(resp.Results[0], key)
		if err != nil {
			err = fmt.Errorf("copy from node %s refused: %w", n, err)
			tr.refused = append(tr.refused, err)
			errs = append(errs, err)
			continue
		}
		return r, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no good result from any of %d nodes (each answered above)", len(nodes))
	}
	return nil, fmt.Errorf("no good result from any of %d nodes: %w", len(nodes), errors.Join(errs...))
}

// nodeSaid is what one node answered a result request for a job.
type nodeSaid struct {
	answered bool      // it answered (with or without the result)
	holds    bool      // it sent the job's replica state
	phase    job.Phase // that state's phase
}

// saidBy is a node's answer, from the states of its reply, for the job of
// key.
func saidBy(states []wire.SyncItem, key []byte) nodeSaid {
	s := nodeSaid{answered: true}
	for _, it := range states {
		if bytes.Equal(it.Key, key) {
			s.holds, s.phase = true, it.State.Phase
		}
	}
	return s
}

// fetchTrace is what asking nodes for one job's result found besides the
// result: the copies refused, and what each node asked answered.
type fetchTrace struct {
	refused []error
	said    map[peer.ID]nodeSaid
}
