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

// audit asks the r closest nodes of a place (the one the reports'
// tickets named, where the nodes that granted the claims held the
// jobs), in the background, for the state of each job of reps after its
// client reported it done or released — all of them in one request per
// node (the reports of one request drawn for audit at one place: a
// flush's reports are mostly of one claim group). For each job, when a
// majority of the r (⌊r/2⌋+1) still hold it claimed by that client, the
// report was a lie — a result is counted delivered only once a majority
// stored it, a release is sent to all — and the client's account takes
// it as a failure and holds the job again (quota.Book.Lied).
//
// The nodes are first the r nearest the place in this node's own view
// (its routing table: no lookup), asked one at a time until every job's
// verdict is decided (auditTally); only when their answers leave one
// open — the view is not the jobs' nodes, or not all of them — is the
// place looked up in the network and its nodes asked (answers already
// had reused).
func (s *Service) audit(place []byte, reps []*wire.QuotaReport) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.RPCTimeout)
		defer cancel()
		ask := func(p peer.ID) []auditAnswer { return s.askStates(ctx, p, reps) }
		lookup := func() ([]peer.ID, error) {
			s.mAudits.WithLabelValues("lookup").Inc()
			return s.dht.ClosestPeers(ctx, place)
		}
		r := s.dht.Replication()
		tallies, err := runAuditMany(r, len(reps), s.localNearest(place, r), lookup, ask)
		if err != nil {
			return
		}
		for i, t := range tallies {
			s.audited(reps[i], t)
		}
	}()
}

// audited counts a report's audit done and, when it found a lie, takes
// the report as a failure.
func (s *Service) audited(req *wire.QuotaReport, t auditTally) {
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
}

// auditDue are the reports of one request drawn for audit, by the place
// their tickets named (the job's key for a job placed by it, or a place
// forgotten), in the order drawn.
type auditDue struct {
	places []string
	by     map[string][]*wire.QuotaReport
}

// dueLocked adds req to d, at the place its ticket named. s.mu is held.
func (s *Service) dueLocked(d *auditDue, req *wire.QuotaReport) {
	place, ok := s.places.Get(ticketKey(req.Client, req.Job))
	if !ok {
		place = req.Job
	}
	if d.by == nil {
		d.by = map[string][]*wire.QuotaReport{}
	}
	if _, seen := d.by[string(place)]; !seen {
		d.places = append(d.places, string(place))
	}
	d.by[string(place)] = append(d.by[string(place)], req)
}

// startAudits runs one audit per place of d.
func (s *Service) startAudits(d *auditDue) {
	for _, place := range d.places {
		s.audit([]byte(place), d.by[place])
	}
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
	t, err := runAuditMany(r, 1, local, lookup, func(p peer.ID) []auditAnswer { return []auditAnswer{ask(p)} })
	return t[0], err
}

// runAuditMany is runAudit for n jobs of one place asked together: ask
// answers for all n, and the nodes are asked until every job's tally is
// decided; a node's answer counts for the jobs whose tallies are still
// open, so each job's verdict is the one its own audit would reach.
func runAuditMany(r, n int, local []peer.ID, lookup func() ([]peer.ID, error), ask func(peer.ID) []auditAnswer) ([]auditTally, error) {
	asked := map[peer.ID][]auditAnswer{}
	t := tallyMany(r, n, local, asked, ask)
	if allDecided(t) {
		return t, nil
	}
	nodes, err := lookup()
	if err != nil {
		return t, err
	}
	return tallyMany(r, n, nodes, asked, ask), nil
}

// tallyOf asks nodes in order until the tally of r is decided, reusing
// (and filling) the answers in asked.
func tallyOf(r int, nodes []peer.ID, asked map[peer.ID]auditAnswer, ask func(peer.ID) auditAnswer) auditTally {
	many := make(map[peer.ID][]auditAnswer, len(asked))
	for p, a := range asked {
		many[p] = []auditAnswer{a}
	}
	t := tallyMany(r, 1, nodes, many, func(p peer.ID) []auditAnswer { return []auditAnswer{ask(p)} })
	for p, a := range many {
		asked[p] = a[0]
	}
	return t[0]
}

// tallyMany asks nodes in order until the tallies of n jobs (of r each)
// are all decided, reusing (and filling) the answers in asked; an answer
// is added to the tallies still open.
func tallyMany(r, n int, nodes []peer.ID, asked map[peer.ID][]auditAnswer, ask func(peer.ID) []auditAnswer) []auditTally {
	t := make([]auditTally, n)
	for i := range t {
		t[i].r = r
	}
	for _, p := range nodes {
		if allDecided(t) {
			break
		}
		a, ok := asked[p]
		if !ok {
			a = ask(p)
			asked[p] = a
		}
		for i := range t {
			if !t[i].decided() && i < len(a) {
				t[i].add(a[i])
			}
		}
	}
	return t
}

// allDecided reports that every tally of t is decided.
func allDecided(t []auditTally) bool {
	for _, x := range t {
		if !x.decided() {
			return false
		}
	}
	return true
}

// askStates asks node p, in one request, whether it holds each job of
// reps, and claimed by its report's client. An answer that does not
// account for every job asked (its jobs and missing keys) counts as none.
func (s *Service) askStates(ctx context.Context, p peer.ID, reps []*wire.QuotaReport) []auditAnswer {
	out := make([]auditAnswer, len(reps))
	keys := make([][]byte, len(reps))
	for i, r := range reps {
		keys[i] = r.Job
	}
	var resp wire.GetResponse
	cctx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
	defer cancel()
	if err := s.ep.Call(cctx, p, wire.ProtoJobGet, &wire.GetRequest{Keys: keys}, 4<<20, &resp); err != nil {
		return out
	}
	return answersOf(reps, &resp)
}

// answersOf reads a node's answer to an audit of reps: its jobs come in
// the order asked, those it lacks named missing. An answer that does not
// account for every job counts as none.
func answersOf(reps []*wire.QuotaReport, resp *wire.GetResponse) []auditAnswer {
	out := make([]auditAnswer, len(reps))
	if len(resp.Jobs)+len(resp.Missing) != len(reps) {
		return out
	}
	missing := make(map[string]bool, len(resp.Missing))
	for _, k := range resp.Missing {
		missing[string(k)] = true
	}
	next := 0
	for i, r := range reps {
		out[i].answered = true
		if missing[string(r.Job)] || next >= len(resp.Jobs) {
			continue
		}
		st := resp.Jobs[next].State
		next++
		out[i].holds = true
		out[i].claimed = st.Phase == job.Claimed && string(st.Client) == string(r.Client)
	}
	return out
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
