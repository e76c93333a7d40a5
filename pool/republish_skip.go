package pool

import (
	"encoding/binary"
	"hash/fnv"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/replica"
)

// replicaRoundJob is a job as a round plans it.
type replicaRoundJob = replica.RoundJob[peer.ID]

// Collected jobs already synced. A collected job is kept T_collect (2 h)
// and does not change; a republish round every 25 min synced each one to
// the same replicas ~5 times over its stay, 8 states a round (the closest
// to the other r − 1, each of those to the closest): in a steady run,
// republishing was ~150 µs of the nodes' CPU per job, the largest cost
// that grows with the time jobs are kept. A round now skips a collected
// job whose collected state this node already synced, in an earlier
// round, to every node of the same view — the same r nearest live nodes,
// each admitted on the same connection as then (viewEpochs) — unless the
// round is a full one (every Config.RepublishFullEvery-th, the first
// included).
//
// Why nothing is lost. A skipped sync would have sent a replica a state it
// answered for last time: it merged it (collected wins every merge and is
// terminal), already held it, or refused it (a refusal the next full
// round retries); one that lacked the job and did not store it when sent
// is not marked. A replica can lose it since only by losing
// its store (a new identity: a new view) or by restarting on an older
// copy of its store (a new admission: a new epoch, so a new view hash);
// a node that joined or left changes the view. What remains — a replica
// that lost the state without any of that — is repaired by the next full
// round, at most RepublishFullEvery − 1 rounds later, as every replica was
// before this change at most one round later. Jobs not collected (ready,
// claimed, finished) and jobs handed on are synced every round as before.

// viewEpochs numbers the admissions of peers: a peer admitted again (a
// restart, a new connection) gets a new number, so the views it is in
// hash differently and their jobs are synced in full again.
type viewEpochs struct {
	mu   sync.Mutex
	of   map[peer.ID]uint64
	next uint64
}

// maxViewEpochs bounds the peers numbered; past it the numbers start
// afresh (every view then hashes anew: one round syncs in full).
const maxViewEpochs = 1 << 16

// admitted gives q a new admission number.
func (v *viewEpochs) admitted(q peer.ID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.of == nil || len(v.of) >= maxViewEpochs {
		v.of = map[peer.ID]uint64{}
	}
	v.next++
	v.of[q] = v.next
}

// snapshot copies the numbers, for one round's hashes.
func (v *viewEpochs) snapshot() map[peer.ID]uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[peer.ID]uint64, len(v.of))
	for q, n := range v.of {
		out[q] = n
	}
	return out
}

// viewHash hashes a job's view (its r nearest live nodes, in order) with
// each node's admission number; never 0 (0 marks "never synced").
func viewHash(view []peer.ID, epochs map[peer.ID]uint64) uint64 {
	h := fnv.New64a()
	var n [8]byte
	for _, q := range view {
		_, _ = h.Write([]byte(q))
		binary.BigEndian.PutUint64(n[:], epochs[q])
		_, _ = h.Write(n[:])
	}
	return h.Sum64() | 1
}

// fullRound reports whether the round starting now syncs every job, and
// counts it.
func (p *Pool) fullRound() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.rounds
	p.rounds++
	return n%uint64(p.cfg.RepublishFullEvery) == 0
}

// markCollectedSynced records, for each collected job a round synced to
// every target of its view (no target failed, and each that lacked it
// stored it), the view it was synced to.
func (p *Pool) markCollectedSynced(rs roundSkips, st *RoundStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, sent := range rs.sent {
		ok := !st.unsynced[k]
		for _, t := range rs.targets[k] {
			if st.failed[t] {
				ok = false
				break
			}
		}
		e := p.jobs[k]
		if !ok || e == nil || !job.Equal(e.state, sent) {
			continue
		}
		e.syncedView, e.syncedAt = rs.views[k], sent.At
	}
}

// roundSkips is what a round skips and what it records: the collected
// jobs it skips, and for those it sends, their view's hash, the state
// sent and the targets sent to.
type roundSkips struct {
	skip    map[string]bool
	views   map[string]uint64
	sent    map[string]job.State
	targets map[string][]peer.ID
}

// planSkips decides which of a round's jobs it skips (replica.SkipSync) and hashes
// the views of the collected ones it sends. Jobs handed on are never
// skipped: their copy here is dropped only after a sync.
func (p *Pool) planSkips(jobs []replicaRoundJob, handed map[string]bool) roundSkips {
	rs := roundSkips{skip: map[string]bool{}, views: map[string]uint64{}, sent: map[string]job.State{}, targets: map[string][]peer.ID{}}
	full := p.fullRound()
	epochs := p.views.snapshot()
	hashes := map[*peer.ID]uint64{} // by view: NearestLiveMany gives many jobs one view
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range jobs {
		if j.State.Phase != job.Collected || handed[j.Key] || len(j.View) == 0 {
			continue
		}
		e := p.jobs[j.Key]
		if e == nil {
			continue
		}
		h, ok := hashes[&j.View[0]]
		if !ok {
			h = viewHash(j.View, epochs)
			hashes[&j.View[0]] = h
		}
		if replica.SkipSync(j.State, e.syncedAt, e.syncedView, h, full) {
			rs.skip[j.Key] = true
			continue
		}
		rs.views[j.Key], rs.sent[j.Key] = h, j.State
	}
	return rs
}
