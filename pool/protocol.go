package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/wire"
)

// handleStore serves /up/job/store/1.0.0.
func (p *Pool) handleStore(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.StoreRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	var project *overlay.Admitted
	switch from.Role() {
	case certs.RoleProject:
		if !req.Replicate {
			return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("a project's store must ask for replication"))
		}
		project = from
	case certs.RoleNode:
		if req.Replicate {
			return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("only a project's store asks for replication"))
		}
	}
	acc := p.accept(req.Jobs, req.Certs, project, &source{name: from.Identity.Name, peer: from.Peer, proto: wire.ProtoJobStore})
	resp := &wire.StoreResponse{Results: make([]wire.StoreResult, len(acc))}
	var keys [][]byte
	var idx []int
	for i, a := range acc {
		resp.Results[i] = wire.StoreResult{Status: a.status, Msg: a.msg}
		if a.status == wire.StatusOK {
			keys = append(keys, a.key)
			idx = append(idx, i)
		}
	}
	if !req.Replicate {
		if rc, ok := p.receipt(keys, seq(len(keys)), idx); ok {
			resp.Receipts = append(resp.Receipts, rc)
		}
		return resp, nil
	}
	acks, receipts := p.replicate(ctx, keys)
	for j, i := range idx {
		resp.Results[i].Acks = uint16(acks[j])
	}
	for _, rc := range receipts {
		if len(resp.Receipts) == wire.MaxReceiptsPerStore {
			break
		}
		for n, j := range rc.Jobs {
			rc.Jobs[n] = uint16(idx[j])
		}
		resp.Receipts = append(resp.Receipts, rc)
	}
	return resp, nil
}

// seq returns 0, 1, ..., n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Replicate places held jobs on their r live closest nodes in this node's
// view, and returns for each how many of those hold it afterwards. A
// target that fails is marked dead and the next closest takes its place.
// A job this node is not among the closest of is deleted here once placed.
func (p *Pool) Replicate(ctx context.Context, keys [][]byte) []int {
	acks, _ := p.replicate(ctx, keys)
	return acks
}

// replicate is Replicate that also returns the holders' signed receipts,
// this node's own among them, each naming jobs by their index in keys.
func (p *Pool) replicate(ctx context.Context, keys [][]byte) ([]int, []wire.StoreReceipt) {
	acks := make([]int, len(keys))
	var receipts []wire.StoreReceipt
	holders := make([]map[peer.ID]bool, len(keys))
	for i := range holders {
		holders[i] = map[peer.ID]bool{}
	}
	self := p.self()
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	places := make([][]byte, len(keys))
	for i, k := range keys {
		if places[i], _ = p.PlaceKey(k); places[i] == nil {
			places[i] = k
		}
	}
	for attempt := 0; attempt < replica.SyncAttempts && len(pending) > 0; attempt++ {
		targets := map[peer.ID][]int{}
		views := map[string][]peer.ID{} // by place: a batch's jobs share theirs
		for _, i := range pending {
			view, seen := views[string(places[i])]
			if !seen {
				view = p.placement(ctx, places[i])
				views[string(places[i])] = view
			}
			for _, t := range view {
				if t == self {
					holders[i][self] = true
				} else if !holders[i][t] {
					targets[t] = append(targets[t], i)
				}
			}
		}
		var mu sync.Mutex
		var retry []int
		var wg sync.WaitGroup
		for t, idx := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, rcs, err := p.pushJobs(ctx, t, keys, idx, nil)
				mu.Lock()
				receipts = append(receipts, rcs...)
				defer mu.Unlock()
				if err != nil {
					p.dht.MarkDead(t)
					retry = append(retry, idx...)
					return
				}
				for j, i := range idx {
					if ok[j] {
						holders[i][t] = true
					}
				}
			}()
		}
		wg.Wait()
		pending = dedupe(retry)
	}
	var mine []int
	for i := range keys {
		acks[i] = len(holders[i])
		if holders[i][self] {
			mine = append(mine, i)
		} else if acks[i] > 0 {
			_ = p.Forget(keys[i])
		}
	}
	if rc, ok := p.receipt(keys, mine, seq(len(keys))); ok {
		receipts = append(receipts, rc)
	}
	return acks, receipts
}

// placement returns the live r closest nodes to a job's place key. A
// node among them knows its neighbourhood completely, so its view
// decides; a node outside it (a project's guess was off) looks the place
// up instead.
func (p *Pool) placement(ctx context.Context, place []byte) []peer.ID {
	pos := keyspace.KeyPos(place)
	view := p.dht.NearestLive(ctx, pos, p.r)
	if slices.Contains(view, p.self()) {
		return view
	}
	found, err := p.dht.ClosestPeers(dht.WithPurpose(ctx, dht.PurposePlace), place)
	if err != nil || len(found) == 0 {
		return view
	}
	var live []peer.ID
	for _, q := range found {
		if p.dht.IsAlive(ctx, q) {
			live = append(live, q)
		}
	}
	return live
}

func dedupe(xs []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// maxBatchBytes bounds the signed jobs in one store request, well inside
// the frame limit.
const maxBatchBytes = 4 << 20

// pushJobs stores the jobs keys[idx] on node t (one replica each) and
// reports which t holds afterwards, with t's signed receipts naming the
// jobs by their index in keys. tr, if not nil, counts the bytes.
func (p *Pool) pushJobs(ctx context.Context, t peer.ID, keys [][]byte, idx []int, tr *traffic) ([]bool, []wire.StoreReceipt, error) {
	ok := make([]bool, len(idx))
	var receipts []wire.StoreReceipt
	for start := 0; start < len(idx); {
		req := &wire.StoreRequest{}
		refs := map[string]bool{}
		var sent []int
		size := 0
		for ; start < len(idx) && len(req.Jobs) < wire.MaxJobsPerStore && size < maxBatchBytes; start++ {
			j := start
			env, err := p.Envelope(keys[idx[j]])
			if err != nil {
				continue
			}
			size += len(env.Signed) + len(env.Listing)
			req.Jobs = append(req.Jobs, env)
			sent = append(sent, j)
			p.addCert(req, refs, keys[idx[j]], env.Signed)
		}
		if len(req.Jobs) == 0 {
			continue
		}
		var resp wire.StoreResponse
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RPCTimeout)
		err := p.call(cctx, t, wire.ProtoJobStore, req, wire.MaxJobFrame, &resp, tr)
		cancel()
		if err != nil {
			return ok, receipts, err
		}
		for n, j := range sent {
			if n < len(resp.Results) && resp.Results[n].Status == wire.StatusOK {
				ok[j] = true
			}
		}
		receipts = append(receipts, keyReceipts(resp.Receipts, sent, idx)...)
	}
	return ok, receipts, nil
}

// keyReceipts renames the jobs of a store's receipts, positions in the
// request, by their index in keys (sent maps a position to one in idx,
// idx to keys); a receipt naming a job not sent is dropped.
func keyReceipts(rcs []wire.StoreReceipt, sent, idx []int) []wire.StoreReceipt {
	var out []wire.StoreReceipt
next:
	for _, rc := range rcs {
		for n, pos := range rc.Jobs {
			if int(pos) >= len(sent) {
				continue next
			}
			rc.Jobs[n] = uint16(idx[sent[pos]])
		}
		out = append(out, rc)
	}
	return out
}

// addCert adds the certificate job key (signed) names to req, once.
func (p *Pool) addCert(req *wire.StoreRequest, refs map[string]bool, key, signed []byte) {
	if ref, der, ok := p.certFor(key, signed); ok && !refs[ref] && len(req.Certs) < wire.MaxCertsPerMsg {
		refs[ref] = true
		req.Certs = append(req.Certs, der)
	}
}

// handleGet serves /up/job/get/1.0.0.
func (p *Pool) handleGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.GetRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp := &wire.GetResponse{}
	refs := map[string]bool{}
	for _, k := range req.Keys {
		env, err := p.Envelope(k)
		if err != nil {
			resp.Missing = append(resp.Missing, k)
			continue
		}
		resp.Jobs = append(resp.Jobs, env)
		if ref, der, ok := p.certFor(k, env.Signed); ok && !refs[ref] && len(resp.Certs) < wire.MaxCertsPerMsg {
			refs[ref] = true
			resp.Certs = append(resp.Certs, der)
		}
	}
	return resp, nil
}

// handleSync serves /up/job/sync/1.0.0: merge the closest node's states
// whose proofs hold, answer what is missing here and where the merged
// state differs. A finished state whose result envelope this node lacks
// is merged only once the envelope, fetched from the sender before the
// answer (so the sender finds the result served here when the sync
// returns), proves it.
func (p *Pool) handleSync(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.SyncRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	now := p.nowMS()
	src := &source{name: from.Identity.Name, peer: from.Peer, proto: wire.ProtoJobSync}
	resp := &wire.SyncResponse{}
	var finished [][]byte
	var unproven []wire.SyncItem
	for _, it := range req.Items {
		p.mu.Lock()
		e, held := p.jobs[string(it.Key)]
		if held {
			e.responsible = now // the closest node counts us among the r
		}
		p.mu.Unlock()
		if !held {
			if st, proof, gone := p.gone(it.Key, now); gone {
				if st.Phase == job.Collected { // else gone without its payload: nothing to tell
					resp.Newer = append(resp.Newer, wire.SyncItem{Key: it.Key, State: st, Proof: proof})
				}
			} else {
				resp.Need = append(resp.Need, it.Key)
			}
			continue
		}
		merged, _, err := p.applyFrom(it.Key, it.State, it.Proof, nil, src)
		if errors.Is(err, errNoEnvelope) {
			unproven = append(unproven, it)
		}
		if !job.Equal(merged, it.State) {
			if cur, ok := p.storedItem(it.Key); ok {
				resp.Newer = append(resp.Newer, cur)
			}
		}
		if merged.Phase == job.Finished {
			finished = append(finished, it.Key)
		}
	}
	// Results that would prove a state come from the sender now; those
	// this replica merely lost, in the background.
	if len(unproven) > 0 {
		p.fetchResults(ctx, src, unproven, nil)
		for _, it := range unproven {
			if cur, ok := p.storedItem(it.Key); ok && job.Equal(cur.State, it.State) {
				resp.Newer = slices.DeleteFunc(resp.Newer, func(n wire.SyncItem) bool { return bytes.Equal(n.Key, it.Key) })
			}
		}
	}
	if missing := p.missingResults(finished); len(missing) > 0 {
		p.inflight.Go(func() { p.fetchResults(p.ctx, src, missing, nil) })
	}
	return resp, nil
}
