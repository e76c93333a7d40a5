package sim

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/up-pool/up/job"
	replicarule "github.com/up-pool/up/replica"
)

// A round skips collected jobs it synced, as pool's rounds do
// (pool/republish_skip.go): a collected job whose collected state the
// node synced, in an earlier round of this run, to the same view — the
// same r nearest live nodes, in order, each in the same run (a restart
// is a new admission) — is not synced again, except in full rounds (the
// first of a run and every Config.RepublishFullEvery-th); the rule is
// replica.SkipSync. Pool marks a job only once every sync of it
// succeeded; here the mark is set as the round sends and taken back
// when a sync of the job fails (syncFailed), which is the same in the
// end. A target that lacked the job is given it by the sync itself here,
// so pool's "lacked and did not store" case does not arise.

// simViewHash hashes a job's view with each node's run; never 0.
func (s *Sim) simViewHash(view []int32) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, q := range view {
		binary.BigEndian.PutUint32(b[:4], uint32(q))
		binary.BigEndian.PutUint32(b[4:], s.nodes[q].runs)
		_, _ = h.Write(b[:])
	}
	return h.Sum64() | 1
}

// roundSkips decides, for node id's round over jobs (items by key), which
// collected jobs it skips, marks those it sends, and returns the skipped
// keys.
func (s *Sim) roundSkips(id int32, jobs []replicarule.RoundJob[int32], items map[string]syncItem, handed map[string]bool) map[string]bool {
	n := &s.nodes[id]
	full := n.rounds%uint64(s.c.RepublishFullEvery) == 0
	n.rounds++
	skip := map[string]bool{}
	for _, j := range jobs {
		if j.State.Phase != job.Collected || handed[j.Key] || len(j.View) == 0 {
			continue
		}
		rep := n.jobs[items[j.Key].job]
		synced := rep.synced
		if rep.syncedRun != n.runs {
			synced = 0
		}
		h := s.simViewHash(j.View)
		if replicarule.SkipSync(j.State, rep.syncedAt, synced, h, full) {
			skip[j.Key] = true
			s.m.skippedSyncs++
			continue
		}
		rep.synced, rep.syncedAt, rep.syncedRun = h, j.State.At, n.runs
	}
	return skip
}

// unmarkSynced takes back the marks of the jobs of a round's sync that
// failed: the next round syncs them again.
func (s *Sim) unmarkSynced(id int32, items []syncItem) {
	for _, it := range items {
		if rep := s.nodes[id].jobs[it.job]; rep != nil {
			rep.synced = 0
		}
	}
}
