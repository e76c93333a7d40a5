package claimnet

import (
	"bytes"
	"context"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
)

// voidUncertified ends, with a release kept here only, the claim st of
// job key that this node accepted at least TCert ago and that still has no
// certificate although a Resync (which fetches the certificate from any
// fellow replica holding it) ended since it was accepted, and reports
// whether it did. Called by the certificate watch (watchCertificates)
// and when another client asks for the job, whose own Resync serves the
// next request.
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
		return false // certified, or a proof this node cannot read
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

// certWatch is the certificate watch's goroutine: stop ends it, done is
// closed once it has.
type certWatch struct {
	stop context.CancelFunc
	done chan struct{}
}

// maxWatchPerRound bounds the claims one watch round looks at (a client
// that confirms without ever certifying leaves one record per job); the
// rest wait for the next round.
const maxWatchPerRound = 256

// adoptUncertified puts the claims this node holds without a certificate
// — accepted before a restart, whose claim log was in memory — under the
// certificate watch, as accepted by the latest clock allowed (the claim's
// start + T_skew, as voidUncertified judges a claim it has no record of).
// Without it a job's closest that restarted holding one kept it until
// its deadline, and listed the job nowhere meanwhile.
func (s *Service) adoptUncertified() {
	skew := s.cfg.TSkew.Milliseconds()
	s.pool.Each(func(h pool.Held) bool {
		if h.State.Phase == job.Claimed && !s.certified(h.Key) {
			s.mu.Lock()
			s.srv.Adopt(string(h.Key), h.State.Client, h.State.Start, h.State.Deadline, h.State.Start+skew)
			s.mu.Unlock()
		}
		return true
	})
}

func (s *Service) startCertWatch() {
	ctx, stop := context.WithCancel(context.Background())
	s.watch = certWatch{stop: stop, done: make(chan struct{})}
	every := max(s.cfg.TCert/4, 10*time.Millisecond)
	go func() {
		defer close(s.watch.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.watchCertificates()
			}
		}
	}()
}

// Close stops the certificate watch. The handlers stay until the
// endpoint closes.
func (s *Service) Close() error {
	s.watch.stop()
	<-s.watch.done
	return nil
}

// watchCertificates is one round of the certificate watch: each claim
// this node accepted at least TCert ago (on its own clock) that is still
// the job's state and still has no certificate is voided if a Resync
// ended since it was accepted and found none, and otherwise resynced now
// (the next round voids it unless the Resync brought the certificate).
// Without the watch such a claim ended only when another client asked for
// the job, and the job's closest node holding it does not list the job,
// so under churn no client came (issue 24: jobs unlisted for seconds at
// the end of a run). Safety is voidUncertified's: voiding makes this node
// one more faulty replica for a claim that did win.
func (s *Service) watchCertificates() (voided int) {
	now := s.now().UnixMilli()
	s.mu.Lock()
	due := s.srv.Unsettled(now - s.cfg.TCert.Milliseconds())
	s.mu.Unlock()
	for _, r := range due[:min(len(due), maxWatchPerRound)] {
		key := []byte(r.Job)
		h, held := s.pool.Lookup(key)
		if !held || h.State.Phase != job.Claimed || !bytes.Equal(h.State.Client, r.Client) || h.State.Start != r.Start || s.certified(key) {
			s.mu.Lock()
			s.srv.Settle(r.Job, r.Client, r.Start)
			s.mu.Unlock()
			continue
		}
		if s.voidUncertified(key, h.State, now) {
			voided++
			continue
		}
		s.pool.Resync(key)
	}
	return voided
}

// certified reports whether this node holds a certificate for job key's
// claim (its proof carries one), or a proof it cannot read: nothing the
// watch could judge.
func (s *Service) certified(key []byte) bool {
	pr, err := job.DecodeProof(s.pool.Proof(key))
	return err != nil || len(pr.Claim) > 0
}
