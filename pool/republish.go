package pool

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/wire"
)

// RoundStats reports one republish round.
type RoundStats struct {
	Held, Closest int // jobs held; jobs this node republished as their closest
	Synced        int // states sent
	Repaired      int // jobs sent to a replica that lacked them
	Merged        int // states changed here by newer ones from replicas
	Dropped       int // jobs deleted: not among the r closest for the replica expiry
	Failed        int // targets that did not answer
	Skipped       int // syncs of collected jobs not sent: already synced to the same view (republish_skip.go)
	Elapsed       time.Duration
	RPCs          int // sync and store calls that completed
	// BytesSent counts the request frames this node sent in the round's
	// calls that completed (sync, repair stores, result fetches), length
	// prefixes included; BytesReceived the reply bodies it got back.
	BytesSent, BytesReceived int

	changed [][]byte // keys whose state Merged changed, in the round's first pass
	// unsynced are the keys a target lacked and did not store when sent:
	// not marked synced (republish_skip.go).
	unsynced map[string]bool
	// failed are the targets of the round's planned syncs that failed.
	failed map[peer.ID]bool
	// handed are the keys this node only hands on to their closest (it is
	// no longer among their r closest): it fetches no result for them.
	handed map[string]bool
}

// CatchUp runs a republish round now when this pool started with jobs
// from its store and none has run since (a node that restarted): every
// held job's state is exchanged with its fellow replicas, whose replies
// merge in what changed while the node was down — a claim, a result, a
// collection. Until then the node's index writer lists none of its jobs
// (Behind): a restarted node listed the jobs it held as ready when it went
// down, claimed meanwhile, and each listing sent clients to a claimed job
// until the republish round that came 20–30 min later (issue 24). The
// node calls it once it has joined (node.Start); it returns the round's
// figures, zero when there was nothing to catch up.
func (p *Pool) CatchUp(ctx context.Context) RoundStats {
	if !p.behind.Load() {
		return RoundStats{}
	}
	return p.RepublishRound(ctx)
}

// Behind reports whether the jobs this pool loaded at start still wait for
// their first republish round (CatchUp).
func (p *Pool) Behind() bool { return p.behind.Load() }

func (p *Pool) republishLoop() {
	for {
		t := time.NewTimer(p.jitter())
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
			st := p.RepublishRound(p.ctx)
			p.log.Debug("republish round", "held", st.Held, "closest", st.Closest, "repaired", st.Repaired,
				"merged", st.Merged, "dropped", st.Dropped, "failed", st.Failed, "elapsed", st.Elapsed)
		}
	}
}

func (p *Pool) expiryLoop() {
	t := time.NewTicker(p.cfg.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.ExpireNow()
		}
	}
}

// RepublishRound runs one two-way republish round (thesis 3.2.4, 4.2.1):
// for every job whose closest live node this node is, it syncs the job's
// state to the others of the r closest, sends the job to those that lack
// it, and merges what they answer; jobs it is no longer among the r
// closest of for longer than the replica expiry are deleted. A job it is
// no longer among the r closest of is synced to the closest until then,
// and once more before it is deleted: its state here may be newer than
// theirs (a result, release or collected notice sent to the claim's
// nodes after the job's closest nodes changed), and must not leave with
// this node's copy. The copy is deleted only after that sync succeeded
// and the closest serves the result held here (handedOn); otherwise it
// stays, and the next round tries again.
func (p *Pool) RepublishRound(ctx context.Context) RoundStats {
	start := time.Now()
	now := p.nowMS()
	self := p.self()
	var st RoundStats
	jobs, poss := p.roundJobs(now)
	st.Held = len(jobs)
	// Liveness is probed once per peer per round, before the plan.
	probe := p.dht.NewProber()
	for i, v := range probe.NearestLiveMany(ctx, poss, p.r) {
		jobs[i].View = v
	}
	pl := replica.PlanRound(self, jobs, now, p.cfg.ReplicaExpiry.Milliseconds())
	st.Closest, st.handed = pl.Closest, pl.Handed
	for _, k := range pl.Responsible {
		p.markResponsible(k, now)
	}
	skip := p.planSkips(jobs, pl.Handed)
	plan := make(map[peer.ID][]string, len(pl.Sync))
	for t, keys := range pl.Sync {
		for _, k := range keys {
			if skip.skip[k] {
				st.Skipped++
				continue
			}
			plan[t] = append(plan[t], k)
			if _, ok := skip.sent[k]; ok {
				skip.targets[k] = append(skip.targets[k], t)
			}
		}
	}
	sends := p.roundItems(plan)
	synced := p.syncPlanned(ctx, sends, probe, &st)
	p.markCollectedSynced(skip, &st)
	p.resendChanged(ctx, pl.Replicas, &st)
	drop := make([][]byte, len(pl.Drop))
	for i, k := range pl.Drop {
		drop[i] = []byte(k)
	}
	for _, key := range p.handedOn(ctx, drop, synced) {
		if err := p.Forget(key); err == nil {
			st.Dropped++
			p.mDropped.Inc()
		}
	}
	st.handed = nil
	st.Elapsed = time.Since(start)
	p.behind.Store(false)
	return st
}

// roundJobs are the unexpired jobs held, for a round's plan, and their
// positions.
func (p *Pool) roundJobs(now int64) ([]replica.RoundJob[peer.ID], []keyspace.Pos) {
	p.mu.Lock()
	defer p.mu.Unlock()
	jobs := make([]replica.RoundJob[peer.ID], 0, len(p.jobs))
	poss := make([]keyspace.Pos, 0, len(p.jobs))
	for k, e := range p.jobs {
		if job.Expired(e.expires, now) {
			continue // ExpireNow drops it; no replica is repaired with it
		}
		jobs = append(jobs, replica.RoundJob[peer.ID]{Holding: replica.Holding{Key: k, State: e.state, Responsible: e.responsible}})
		poss = append(poss, e.pos)
	}
	return jobs, poss
}

// roundItems are the items a round sends each target: each planned job's
// state and proof as sendable now (a state newer than the one planned on
// goes out; a job deleted since is left out), each built once and read
// under one lock, only for the jobs the round sends (skipped ones cost
// nothing).
func (p *Pool) roundItems(plan map[peer.ID][]string) map[peer.ID][]wire.SyncItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	built := map[string]wire.SyncItem{}
	sends := make(map[peer.ID][]wire.SyncItem, len(plan))
	for t, keys := range plan {
		for _, k := range keys {
			item, ok := built[k]
			if !ok {
				e := p.jobs[k]
				if e == nil {
					continue
				}
				item = wire.SyncItem{Key: []byte(k)}
				item.State, item.Proof = p.sendable(e.state, e.proof)
				built[k] = item
			}
			sends[t] = append(sends[t], item)
		}
	}
	return sends
}

// syncPlanned sends each target its items. A target that fails is marked
// dead and its items re-planned (Replan) onto the new views, a few times
// at most. Jobs handed on go to their new closest, and are dropped only
// once synced (see handedOn): it returns, per job handed on, the node
// that took it, and records each target that failed in st.
func (p *Pool) syncPlanned(ctx context.Context, plan map[peer.ID][]wire.SyncItem, probe *dht.Prober, st *RoundStats) map[string]peer.ID {
	self := p.self()
	synced := map[string]peer.ID{}
	for attempt := 0; attempt < replica.SyncAttempts && len(plan) > 0; attempt++ {
		next := map[peer.ID][]wire.SyncItem{}
		for t, items := range plan {
			if err := p.syncWith(ctx, t, items, st); err != nil {
				st.Failed++
				if st.failed == nil {
					st.failed = map[peer.ID]bool{}
				}
				st.failed[t] = true
				p.dht.MarkDead(t)
				for _, it := range items {
					view := probe.NearestLive(ctx, p.posOf(it.Key), p.r)
					for _, u := range replica.Replan(self, t, view, st.handed[string(it.Key)]) {
						next[u] = append(next[u], it)
					}
				}
				continue
			}
			markSynced(synced, st.handed, t, items)
		}
		plan = next
	}
	return synced
}

// resendChanged sends what changed here this round to the other replicas
// once more: a replica synced before another answered with a newer state
// got the old one, and one round must leave all r on the same state.
func (p *Pool) resendChanged(ctx context.Context, replicas map[string][]peer.ID, st *RoundStats) {
	if len(st.changed) == 0 {
		return
	}
	again := map[peer.ID][]wire.SyncItem{}
	for _, key := range st.changed {
		targets, ok := replicas[string(key)]
		if !ok {
			continue
		}
		cur, held := p.storedItem(key)
		if !held {
			continue
		}
		for _, t := range targets {
			again[t] = append(again[t], cur)
		}
	}
	for t, items := range again {
		if err := p.syncWith(ctx, t, items, st); err != nil {
			st.Failed++
		}
	}
	st.changed = nil
}

func (p *Pool) markResponsible(key string, now int64) {
	p.mu.Lock()
	if e, ok := p.jobs[key]; ok {
		e.responsible = now
	}
	p.mu.Unlock()
}

// syncWith sends one target its items, in batches; merges newer states
// and stores the jobs it lacks. It adds the calls' bytes to st.
func (p *Pool) syncWith(ctx context.Context, t peer.ID, items []wire.SyncItem, st *RoundStats) error {
	var tr traffic
	defer func() {
		st.BytesSent += tr.sent
		st.BytesReceived += tr.received
	}()
	for start := 0; start < len(items); start += wire.MaxSyncItems {
		batch := items[start:min(start+wire.MaxSyncItems, len(items))]
		var resp wire.SyncResponse
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RPCTimeout)
		err := p.call(cctx, t, wire.ProtoJobSync, &wire.SyncRequest{Items: batch}, wire.MaxJobFrame, &resp, &tr)
		cancel()
		if err != nil {
			return err
		}
		st.RPCs++
		st.Synced += len(batch)
		p.mSynced.Add(float64(len(batch)))
		src := p.srcOf(t, wire.ProtoJobSync)
		var newer [][]byte
		var unproven []wire.SyncItem
		for _, it := range resp.Newer {
			before, _ := p.stored(it.Key)
			after, _, err := p.applyFrom(it.Key, it.State, it.Proof, nil, src)
			switch {
			case errors.Is(err, errNoEnvelope):
				if !st.handed[string(it.Key)] {
					unproven = append(unproven, it)
				}
			case err == nil && !job.Equal(before, after):
				st.Merged++
				st.changed = append(st.changed, it.Key)
			}
			newer = append(newer, it.Key)
		}
		newer = slices.DeleteFunc(newer, func(k []byte) bool { return st.handed[string(k)] })
		// A finished state is merged once its envelope, fetched from t,
		// proves it (proof.go).
		if fetch := append(unproven, p.missingResults(newer)...); len(fetch) > 0 {
			for _, k := range p.fetchResults(ctx, src, fetch, &tr) {
				st.Merged++
				st.changed = append(st.changed, k)
			}
		}
		if len(resp.Need) > 0 {
			idx := make([]int, len(resp.Need))
			for i := range idx {
				idx[i] = i
			}
			ok, _, err := p.pushJobs(ctx, t, resp.Need, idx, &tr)
			if err != nil {
				return err
			}
			st.RPCs++
			for i, o := range ok {
				if o {
					st.Repaired++
					p.mRepaired.Inc()
					continue
				}
				if st.unsynced == nil {
					st.unsynced = map[string]bool{}
				}
				st.unsynced[string(resp.Need[i])] = true
			}
		}
	}
	return nil
}

// ExpireNow drops jobs whose project-signed lifetime ended (job.Expired
// on this node's clock); tells the OnChange hooks of claims that lapsed on
// this node's clock since it last looked (job.Lapse: T_skew past the
// deadline, or released), and of claims live again (the clock was set
// back); deletes collected jobs kept longer than T_collect (remembering
// their keys until the job expires, and GoneKeep at least, see gone.go)
// and forgets the gone records that lapsed. A lapse is never stored: the
// state stays the claim, so a clock that jumped ahead ends it here only
// while it is ahead. Every read and merge judges lapses itself, with the
// same result. It returns how many claims it found lapsed and jobs it
// deleted.
func (p *Pool) ExpireNow() (lapsed, deleted int) {
	now := p.nowMS()
	tc := p.cfg.TCollect.Milliseconds()
	var changes []change
	p.mu.Lock()
	d := p.newDeletions()
	for k, e := range p.jobs {
		switch {
		case job.Expired(e.expires, now):
			// No gone record: this node refuses the job at store by the
			// same rule on the same clock from now on.
			dropExpired(d.batch(), []byte(k), e.keys())
			d.add(k, false)
		case e.state.Phase == job.Claimed:
			v := p.view(e, now)
			if ended := v.Phase != job.Claimed; ended != e.lapsed {
				e.lapsed = ended
				if ended {
					lapsed++
				}
				changes = append(changes, change{key: []byte(k), st: v})
			}
		case e.state.Phase == job.Collected && now-e.state.At >= tc:
			p.goneKeys.add([]byte(k)) // before the record is on disk: never a miss
			markGone(d.batch(), d.goneBatch(), []byte(k), e.keys(), e.state.At, goneLapse(e.expires, now, p.cfg.GoneKeep.Milliseconds()), e.proof)
			d.add(k, true)
		}
		if d.full() {
			changes = d.commit(changes)
		}
	}
	changes = d.commit(changes)
	deleted = d.deleted
	p.mu.Unlock()
	if _, err := p.expireGone(now); err != nil {
		p.log.Warn("expire", "err", err)
	}
	p.refreshGoneFilter()
	if _, err := p.expireBoards(now); err != nil {
		p.log.Warn("expire", "err", err)
	}
	p.notify(changes...)
	return lapsed, deleted
}
