package testnet

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/wire"
)

// Bounds of a replaying node's records.
const (
	maxReplayJobs    = 4096 // jobs remembered
	maxReplayRecords = 8    // distinct (state, proof) records per job
	replaysPerJob    = 3    // times a job over here is replayed
)

// replayJob is what a replaying node recorded of one job.
type replayJob struct {
	key     []byte
	recs    []wire.JobEnvelope // signed spec, listing, each state with its proof, oldest first
	cert    []byte             // the project's certificate (DER)
	overAt  time.Time          // when deleted here; zero while held
	replays int
}

// replayer records the jobs a replay node holds as they change.
type replayer struct {
	mu   sync.Mutex
	jobs map[string]*replayJob
}

// record keeps the job's current state and proof at nd if new.
func (rp *replayer) record(nd *node.Node, key []byte, a *adversary) {
	env, err := nd.Pool().Envelope(key)
	if err != nil {
		return
	}
	if env.State.Phase == job.Collected {
		return // nothing to replay: a collected job is what it was
	}
	var cert []byte
	if _, spec, err := job.Decode(env.Signed); err == nil {
		cert, _ = nd.Pool().Cert(spec.CertRef)
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	j := rp.jobs[string(key)]
	if j == nil {
		if len(rp.jobs) >= maxReplayJobs {
			return
		}
		j = &replayJob{key: slices.Clone(key), cert: cert}
		rp.jobs[string(key)] = j
	}
	for _, r := range j.recs {
		if job.Equal(r.State, env.State) && string(r.Proof) == string(env.Proof) {
			return
		}
	}
	if len(j.recs) < maxReplayRecords {
		j.recs = append(j.recs, env)
		a.add(BehaviourReplay+"/recorded", 1)
	}
}

// end marks a job deleted here at now (collected T_collect ago, or
// handed on): due for replay.
func (rp *replayer) end(key []byte, now time.Time) {
	rp.mu.Lock()
	if j := rp.jobs[string(key)]; j != nil && j.overAt.IsZero() {
		j.overAt = now
	}
	rp.mu.Unlock()
}

// due returns up to n jobs deleted here and replayed fewer than
// replaysPerJob times, the k-th replay no sooner than k × gap after the
// deletion, counting this replay.
func (rp *replayer) due(n int, now time.Time, gap time.Duration) []replayJob {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	var out []replayJob
	for _, j := range rp.jobs {
		if len(out) == n {
			break
		}
		if !j.overAt.IsZero() && j.replays < replaysPerJob && len(j.recs) > 0 && now.Sub(j.overAt) >= time.Duration(j.replays)*gap {
			j.replays++
			out = append(out, replayJob{key: j.key, recs: slices.Clone(j.recs), cert: j.cert})
		}
	}
	return out
}

// startReplay makes node i record its jobs as they change (and every
// interval, for proofs that arrive after their state) and replay those
// deleted here (collected T_collect before), three times, 5 intervals
// apart.
func (n *Network) startReplay(i int, nd *node.Node) {
	rp := &replayer{jobs: map[string]*replayJob{}}
	nd.Pool().OnChange(func(key []byte, st job.State, deleted bool) {
		if deleted {
			rp.end(key, time.Now())
			return
		}
		rp.record(nd, key, n.adv)
	})
	go n.every(i, nd, func(int) {
		for _, k := range nd.Pool().Keys() {
			rp.record(nd, k, n.adv)
		}
		for _, j := range rp.due(forgesPerRound, time.Now(), 5*n.adv.interval) {
			n.replay(nd, j)
		}
	})
}

// replay sends a job over at nd again: its signed spec as first recorded
// (never claimed) by job/store to every other running node, then its old
// claimed states and tombstones with their proofs by job/sync to the same
// nodes. After each store the harness looks whether the receiver, which
// did not hold the job before, holds it now (replay/resurrected).
func (n *Network) replay(nd *node.Node, j replayJob) {
	closest := n.JobClosest(j.key, n.replication())
	var items []wire.SyncItem
	for _, r := range j.recs[1:] {
		if r.State.Phase == job.Claimed || r.State.IsTombstone() {
			items = append(items, wire.SyncItem{Key: j.key, State: r.State, Proof: r.Proof})
		}
	}
	req := &wire.StoreRequest{Jobs: j.recs[:1]}
	if len(j.cert) > 0 {
		req.Certs = [][]byte{j.cert}
	}
	for _, other := range n.Live() {
		to := other.ID()
		if to == nd.ID() {
			continue
		}
		_, heldBefore := other.Pool().State(j.key)
		var resp wire.StoreResponse
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := nd.Endpoint().Call(ctx, to, wire.ProtoJobStore, req, wire.MaxJobFrame, &resp)
		cancel()
		if err == nil {
			n.adv.add(BehaviourReplay+"/store-sent", 1)
			for _, r := range resp.Results {
				switch r.Status {
				case wire.StatusOK:
					n.adv.add(BehaviourReplay+"/store-ok", 1)
				case wire.StatusGone:
					n.adv.add(BehaviourReplay+"/store-gone", 1)
				}
			}
		}
		if len(items) > 0 && syncTo(nd, to, items) == nil {
			n.adv.add(BehaviourReplay+"/sync-sent", len(items))
		}
		if st, held := other.Pool().State(j.key); held && !heldBefore && st.Phase != job.Collected {
			n.adv.add(BehaviourReplay+"/resurrected", 1)
			if slices.Contains(closest, peer.ID(to)) {
				n.adv.add(BehaviourReplay+"/resurrected-replica", 1)
			}
		}
	}
}
