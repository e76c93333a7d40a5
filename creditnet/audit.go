package creditnet

import (
	"context"
	"encoding/hex"
	"math/rand/v2"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/wire"
)

// auditDue draws whether a job's reported end is audited: one in
// Config.AuditEvery, from the node's seeded stream. s.mu is held.
func (s *Service) auditDueLocked() bool {
	if s.cfg.AuditEvery <= 0 {
		return false
	}
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(s.env.Seed, 0xa0d1))
	}
	return s.rng.IntN(s.cfg.AuditEvery) == 0
}

// audit asks the job's r closest nodes (those of the place its ticket
// named, where the nodes that granted the claim held it), in the
// background, for the job's state after its client reported it done or
// released. When a majority of those that answer (at least ⌊r/2⌋+1)
// still hold it claimed by that client, the report was a lie — a result is counted delivered only once
// a majority stored it, a release is sent to all — and the client's
// account takes it as a failure and holds the job again (quota.Book.Lied).
func (s *Service) audit(req *wire.QuotaReport) {
	s.mu.Lock()
	place, ok := s.places.Get(ticketKey(req.Client, req.Job))
	s.mu.Unlock()
	if !ok {
		place = req.Job // a job placed by its key, or a place forgotten
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.RPCTimeout)
		defer cancel()
		nodes, err := s.dht.ClosestPeers(ctx, place)
		if err != nil {
			return
		}
		claimed, answered := 0, 0
		for _, p := range nodes {
			var resp wire.GetResponse
			cctx, ccancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
			err := s.ep.Call(cctx, p, wire.ProtoJobGet, &wire.GetRequest{Keys: [][]byte{req.Job}}, 4<<20, &resp)
			ccancel()
			if err != nil {
				continue
			}
			answered++
			for _, j := range resp.Jobs {
				if j.State.Phase == job.Claimed && string(j.State.Client) == string(req.Client) {
					claimed++
				}
			}
		}
		s.mAudits.WithLabelValues("done").Inc()
		if answered == 0 || claimed < len(nodes)/2+1 {
			return
		}
		s.mAudits.WithLabelValues("lie").Inc()
		s.log.Info("quota report was a lie: the job's nodes still hold it claimed by the client",
			"client", shortKey(req.Client), "job", shortKey(req.Job), "outcome", quota.Outcome(req.Outcome), "claimed", claimed, "answered", answered)
		s.mu.Lock()
		s.book.Lied(string(req.Client), string(req.Job), s.env.Now().UnixMilli())
		s.saveQuotaLocked(string(req.Client))
		s.mu.Unlock()
	}()
}

// shortKey is a key's first 6 bytes in hex, for logs.
func shortKey(b []byte) string { return hex.EncodeToString(b[:min(len(b), 6)]) }
