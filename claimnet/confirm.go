package claimnet

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// checkReplies checks a confirm's replies (checkReply), queueing their
// signatures on sigs; a reply that fails is the confirm's refusal.
func (s *Service) checkReplies(req *wire.ConfirmRequest, from *overlay.Admitted, client []byte, now time.Time, sigs *batch) ([]claim.Reply, error) {
	replies := make([]claim.Reply, 0, len(req.Replies))
	for i, b := range req.Replies {
		r, err := s.checkReply(i, b, req.Job, client, now, sigs)
		if errors.Is(err, ErrUnbound) {
			s.attribute(b, from.Identity.Name, peer.ID(r.Node), err)
		}
		if err != nil {
			s.refused(err)
			return nil, overlay.StatusErr(wire.StatusUnauthorized, err)
		}
		replies = append(replies, r)
	}
	return replies, nil
}

// verifyReplies verifies the signatures checkReplies queued on sigs; a
// bad one is the confirm's refusal, attributed to its signer.
func (s *Service) verifyReplies(req *wire.ConfirmRequest, from *overlay.Admitted, replies []claim.Reply, sigs *batch) error {
	bad := sigs.verify()
	if bad < 0 {
		return nil
	}
	s.refused(claim.ErrBadSignature)
	s.attribute(req.Replies[bad], from.Identity.Name, peer.ID(replies[bad].Node), claim.ErrBadSignature)
	return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("reply of node %s: %w", peer.ID(replies[bad].Node), claim.ErrBadSignature))
}

// confirmChecked decides a confirm of job h by client whose replies are
// checked and verified, at nowMS, and applies it: the accepted claim's
// start, or the refusal.
func (s *Service) confirmChecked(req *wire.ConfirmRequest, h pool.Held, client []byte, replies []claim.Reply, nowMS int64) (int64, error) {
	near, need := nearRule(s.d, h.Pos, nowMS-s.started, s.cfg.Warmup.Milliseconds()) // up to f of the r may deny or be silent
	if far := farReplies(replies, near); len(far) > 0 && probeNear(s.d, h.Pos, far) {
		near, need = nearRule(s.d, h.Pos, nowMS-s.started, s.cfg.Warmup.Milliseconds())
	}
	s.mu.Lock()
	pend, err := s.srv.Confirm(string(req.Job), h.State, client, replies, need, near, req.Start, h.TFinish, nowMS)
	s.mu.Unlock()
	if err != nil {
		s.refused(err)
		return 0, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("confirm of job %x: %w", req.Job, err))
	}
	if s.beforeConfirmApply != nil {
		s.beforeConfirmApply(req.Job)
	}
	merged, err := s.pool.Apply(req.Job, pend.State)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	rel, release, err := s.srv.Applied(pend, merged, nowMS)
	s.mu.Unlock()
	if release {
		_, _ = s.pool.Apply(req.Job, rel)
	}
	if err != nil {
		s.refused(err)
		return 0, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("confirm of job %x: %w", req.Job, err))
	}
	s.mConfirm.WithLabelValues("claimed").Inc()
	return pend.State.Start, nil
}
