package claimnet

import (
	"bytes"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
)

// voidUncertified ends, with a release kept here only, the claim st of
// job key that this node accepted at least TCert ago and that still has no
// certificate although a Resync (which fetches the certificate from any
// fellow replica holding it) ended since it was accepted, and reports
// whether it did. Called when another client asks for the job; that
// request's own Resync serves the next request.
//
// A claim without a certificate after TCert is one whose client did not
// gather a quorum of acceptances (it released the nodes it knew of, and
// this node's release was lost or raced the confirm), or whose certify
// reached no one. Kept, it denies every other client: one such replica
// beside one faulty one leaves no quorum until the deadline. Safety: a
// claim that did win holds a quorum q of acceptances; voiding it here
// makes this node act as one more faulty replica for it, and with the
// certificate at the other acceptors (the Resync fetched none, so none
// holds it within reach) another client still needs q grants, of which at
// most r − q + 1 can come from nodes that accepted nothing or voided.
// The release carries no proof (no client signed it), so it is never
// sent: the other replicas keep their own view.
func (s *Service) voidUncertified(key []byte, st job.State, now int64) bool {
	if pr, err := job.DecodeProof(s.pool.Proof(key)); err != nil || len(pr.Claim) > 0 {
		return false
	}
	// No record of accepting it (a restart): judged from the client's
	// start, accepted by the latest clock allowed, existing here since
	// the earliest.
	skew := s.cfg.TSkew.Milliseconds()
	at, since := st.Start+skew, st.Start-skew
	s.mu.Lock()
	if acc, ok := s.srv.AcceptedAt(string(key), st.Client, st.Start); ok {
		at, since = acc, acc
	}
	s.mu.Unlock()
	if now-at < s.cfg.TCert.Milliseconds() || !s.pool.ResyncedSince(key, since) {
		return false // too young, or no fellow replica asked for the certificate since
	}
	// As if its client released it here: the claim with its deadline
	// moved to now, which outranks it and lapses at once into its
	// tombstone (a bare tombstone of a live claim is kept out).
	rel, _ := claim.Release(st, st.Client, now)
	if v, err := s.pool.Apply(key, rel); err != nil || v.Phase == job.Claimed {
		return false // gone, or something newer came in meanwhile
	}
	s.mu.Lock()
	s.srv.MarkReleased(string(key), func(r claim.Record) bool { return bytes.Equal(r.Client, st.Client) && r.Start == st.Start })
	s.mu.Unlock()
	s.mVoided.Inc()
	s.voided.Add(1)
	s.log.Info("voided a claim that never got its certificate", "job", key, "accepted_ms_ago", now-at)
	return true
}
