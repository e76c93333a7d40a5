package sim

import (
	"bytes"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
)

// The certificate watch, as claimnet runs it (void.go): a claim a node
// accepted that has no certificate T_cert later (its client won no
// quorum and its release to this node was lost, or its certify reached
// no one) is resynced, and voided in a later round once a Resync ended
// since it was accepted; a restarted node adopts the claims it holds
// without a certificate. The ground truth stands for the certificate a
// Resync would fetch: a claim a quorum accepted (Sim.certified) is
// settled, never voided. The rounds step the node's claim.Server
// (Unsettled, Settle, Adopt, MarkReleased), the machine claimnet steps.

// watchSoon schedules node id's next watch round at virtual time at,
// unless one is due sooner.
func (s *Sim) watchSoon(id int32, at int64) {
	n := &s.nodes[id]
	if n.watchAt != 0 && n.watchAt <= at {
		return
	}
	n.watchAt = at
	s.e.at(at, event{kind: evCertWatch, node: id, gen: n.gen})
}

// certWatch is one watch round at node ev.node.
func (s *Sim) certWatch(ev event) {
	if !s.alive(ev) {
		return
	}
	id := ev.node
	n := &s.nodes[id]
	if n.watchAt != s.e.now {
		return // a later round replaced this one
	}
	n.watchAt = 0
	now, skew := s.nowAt(id), s.nowAt(id)-s.e.now
	srv := s.claimsOf(id)
	pending := false
	for _, r := range srv.Unsettled(now - ms(s.c.TCert)) {
		j := r.Job
		rep, st := s.heldState(id, j)
		if rep == nil || st.Phase != job.Claimed || !bytes.Equal(st.Client, r.Client) || st.Start != r.Start || s.certified(j, st) {
			srv.Settle(j, r.Client, r.Start)
			continue
		}
		if at, ok := n.resynced[j]; ok && at+skew >= r.At {
			rel, _ := claim.Release(st, st.Client, now)
			s.setState(id, j, rep, job.Merge(rep.st, rel))
			srv.MarkReleased(j, func(rec claim.Record) bool { return bytes.Equal(rec.Client, r.Client) && rec.Start == r.Start })
			s.m.voided++
			continue
		}
		s.resync(id, j)
		pending = true
	}
	if pending || len(srv.Unsettled(now)) > 0 {
		s.watchSoon(id, s.e.now+max(ms(s.c.TCert)/4, 1))
	}
}

// adoptUncertified: node id restarted; its claims held without a
// certificate come under the watch, judged from their start + T_skew.
func (s *Sim) adoptUncertified(id int32) {
	n := &s.nodes[id]
	n.watchAt = 0
	srv := s.claimsOf(id)
	adopted := false
	for _, j := range sortedKeys(n.jobs) {
		if st := n.jobs[j].st; st.Phase == job.Claimed && !s.certified(j, st) {
			srv.Adopt(j, st.Client, st.Start, st.Deadline, st.Start+claim.DefaultTSkew)
			adopted = true
		}
	}
	if adopted {
		s.watchSoon(id, s.e.now+max(ms(s.c.TCert)/4, 1))
	}
}
