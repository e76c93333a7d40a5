package creditnet

import (
	"context"
	"encoding/hex"
	"math/rand/v2"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
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
// released. When a majority of the r (⌊r/2⌋+1) still hold it claimed by
// that client, the report was a lie — a result is counted delivered only
// once a majority stored it, a release is sent to all — and the client's
// account takes it as a failure and holds the job again
// (quota.Book.Lied).
//
// The nodes are first the r nearest the place in this node's own view
// (its routing table: no lookup), asked one at a time until the verdict
// is decided (auditTally); only when their answers leave it open — the
// view is not the job's nodes, or not all of them — is the place looked
// up in the network and its nodes asked (answers already had reused).
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
		ask := func(p peer.ID) auditAnswer { return s.askState(ctx, p, req) }
		lookup := func() ([]peer.ID, error) {
			s.mAudits.WithLabelValues("lookup").Inc()
			return s.dht.ClosestPeers(ctx, place)
		}
		r := s.dht.Replication()
		t, err := runAudit(r, s.localNearest(place, r), lookup, ask)
		if err != nil {
			return
		}
		s.mAudits.WithLabelValues("done").Inc()
		if !t.lie() {
			return
		}
		s.mAudits.WithLabelValues("lie").Inc()
		s.log.Info("quota report was a lie: the job's nodes still hold it claimed by the client",
			"client", shortKey(req.Client), "job", shortKey(req.Job), "outcome", quota.Outcome(req.Outcome), "claimed", t.claimed, "answered", t.answered)
		s.mu.Lock()
		s.book.Lied(string(req.Client), string(req.Job), s.env.Now().UnixMilli())
		s.saveQuotaLocked(string(req.Client))
		s.mu.Unlock()
	}()
}

// localNearest is the n nodes nearest the key in this node's routing
// table, itself left out (it cannot call itself; were it in a lookup's
// answer, its own call would fail and count as no answer).
func (s *Service) localNearest(key []byte, n int) []peer.ID {
	self := s.ep.ID()
	var out []peer.ID
	for _, p := range s.dht.NearestLocal(keyspace.KeyPos(key), n+1) {
		if p != self && len(out) < n {
			out = append(out, p)
		}
	}
	return out
}

// runAudit tallies the answers of the r nodes nearest the job's place:
// those of local (this node's view) first, then — when their answers
// leave the verdict open (the view is not the job's nodes, or not all of
// them) — those lookup returns, each node asked at most once (ask), one
// at a time until the tally is decided.
func runAudit(r int, local []peer.ID, lookup func() ([]peer.ID, error), ask func(peer.ID) auditAnswer) (auditTally, error) {
	asked := map[peer.ID]auditAnswer{}
	t := tallyOf(r, local, asked, ask)
	if t.decided() {
		return t, nil
	}
	nodes, err := lookup()
	if err != nil {
		return t, err
	}
	return tallyOf(r, nodes, asked, ask), nil
}

// tallyOf asks nodes in order until the tally of r is decided, reusing
// (and filling) the answers in asked.
func tallyOf(r int, nodes []peer.ID, asked map[peer.ID]auditAnswer, ask func(peer.ID) auditAnswer) auditTally {
	t := auditTally{r: r}
	for _, p := range nodes {
		if t.decided() {
			break
		}
		a, ok := asked[p]
		if !ok {
			a = ask(p)
			asked[p] = a
		}
		t.add(a)
	}
	return t
}

// askState asks node p whether it holds job req.Job, and claimed by
// req.Client.
func (s *Service) askState(ctx context.Context, p peer.ID, req *wire.QuotaReport) auditAnswer {
	var resp wire.GetResponse
	cctx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
	defer cancel()
	if err := s.ep.Call(cctx, p, wire.ProtoJobGet, &wire.GetRequest{Keys: [][]byte{req.Job}}, 4<<20, &resp); err != nil {
		return auditAnswer{}
	}
	a := auditAnswer{answered: true}
	for _, j := range resp.Jobs {
		a.holds = true
		if j.State.Phase == job.Claimed && string(j.State.Client) == string(req.Client) {
			a.claimed = true
		}
	}
	return a
}

// auditAnswer is one node's answer to an audit: whether it answered,
// holds the job, and holds it claimed by the reporting client.
type auditAnswer struct{ answered, holds, claimed bool }

// auditTally counts an audit's answers from up to r nodes. The report
// is a lie when a majority of r (⌊r/2⌋+1) hold the job claimed by the
// client; the nodes asked were the job's when a majority hold it.
type auditTally struct {
	r                       int
	answered, held, claimed int
}

func (t *auditTally) add(a auditAnswer) {
	if a.answered {
		t.answered++
	}
	if a.holds {
		t.held++
	}
	if a.claimed {
		t.claimed++
	}
}

func (t auditTally) majority() int { return t.r/2 + 1 }

// lie reports a majority of r holding the job claimed.
func (t auditTally) lie() bool { return t.claimed >= t.majority() }

// decided reports that more answers cannot change the verdict: a lie, or
// so many holders that say it is not claimed that the rest of r cannot
// make a majority claimed (which confirms the view too).
func (t auditTally) decided() bool {
	return t.lie() || t.held-t.claimed > t.r-t.majority()
}

// shortKey is a key's first 6 bytes in hex, for logs.
func shortKey(b []byte) string { return hex.EncodeToString(b[:min(len(b), 6)]) }
