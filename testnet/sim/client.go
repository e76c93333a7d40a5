package sim

import (
	"encoding/binary"
	"slices"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
)

// attempt is one client's search for a job and its claim: an index query
// at random points of the keyword's region, then claim.Driver over the
// replica set the entry carries. Clients sit outside the overlay; each
// attempt uses a random live node as its gateway (the volunteer's own
// node), whose lookup cache it shares.
type attempt struct {
	id      int32
	client  []byte
	job     int32
	gw      int32
	side    int8
	tries   int8
	retries int8
	loop    bool  // a trace client: polls again when done
	fate    uint8 // how its run of the job ends (trace)
	drv     *claim.Driver
	replies []claim.Reply
	start   int64
	doneAt  int64
	born    int64     // ms the client's first attempt started (claim latency)
	won     job.State // the claim a confirm made (Claimed, the client, start and deadline), for the certificate
	asked   []int32   // index nodes this attempt's search asked
	sent    []int32   // nodes its result was sent to (ResultSubmit.Sent): passOn skips them
	// certDue is when a won claim's certificate goes to its nodes on its
	// own (after the certify delay); a result or release before then
	// takes it over (certTaken): the result carries it, a release sends
	// it first.
	certDue   int64
	certTaken bool
}

func (s *Sim) newAttempt(loop bool) *attempt {
	s.clientSeq++
	c := make([]byte, 8)
	binary.BigEndian.PutUint32(c, uint32(s.clientSeq))
	copy(c[4:], "clnt")
	return &attempt{id: s.clientSeq, client: c, job: -1, loop: loop, born: s.e.now}
}

// claimsWanted reports whether open-loop clients keep coming.
func (s *Sim) claimsWanted() bool {
	switch s.c.Workload {
	case Static:
		return s.claimsStarted && s.resultsAt == 0 && s.m.claimedJobs+s.m.lostUnclaimed() < s.c.Jobs
	case Dynamic:
		return s.e.now < ms(s.c.Duration)
	}
	return true
}

// claimStart: the open-loop client generator's tick (att nil), or a
// client (re)starting its search.
func (s *Sim) claimStart(ev event) {
	att := ev.att
	if ev.arg == 1 {
		s.endClaims()
		return
	}
	if att == nil {
		if !s.claimsWanted() {
			return
		}
		// The k-th attempt starts k/Rate s after the first: exactly Rate
		// attempts a second, without rounding drift.
		if s.genCount == 0 {
			s.genStart = s.e.now
		}
		s.genCount++
		s.e.at(s.genStart+int64(float64(s.genCount)*1000/s.c.Rate), event{kind: evClaimStart})
		att = s.newAttempt(false)
	}
	s.startQuery(att, 0)
}

// startQuery sends the client's index query, after delay ms.
func (s *Sim) startQuery(att *attempt, delay int64) {
	r0 := &s.rings[0]
	if r0.len() == 0 {
		return
	}
	att.gw = r0.id[s.e.rng.IntN(r0.len())]
	gw := &s.nodes[att.gw]
	att.side = gw.side
	// indexclient's FindSkipping asks a node of the region it has not
	// asked in this search (Regions.TargetAvoiding): a few draws.
	var to int32
	var lat int64
	for range 4 {
		var l int64
		_, to, l = s.regionTarget(lkQuery, &gw.rv[0], gw.cache, gw.pos, gw.side, s.region, nil)
		lat += l
		if !slices.Contains(att.asked, to) {
			break
		}
	}
	att.asked = append(att.asked, to)
	s.e.after(delay+lat+s.latency(), event{kind: evQuery, node: to, gen: s.nodes[to].gen, att: att})
}

// queryArrive: the index node selects an entry (index.Table.Select: random
// among the oldest l, quarantined once served).
func (s *Sim) queryArrive(ev event) {
	att := ev.att
	if !s.reach(att.side, ev.node, ev.gen) {
		s.retryQuery(att, ms(s.c.RPCTimeout))
		return
	}
	n := &s.nodes[ev.node]
	var es []indexEntryRef
	if n.idx != nil {
		for _, e := range n.idx.Select(s.q, s.c.Keyword, 1, s.e.now, s.e.rng) {
			es = append(es, indexEntryRef{job: jobID(e.Job)})
		}
	}
	s.count(ev.node, kIndex, len(es)*s.c.SizeEntry)
	s.observe(att.gw, ev.node) // the gateway that sent the client's query
	if len(es) == 0 {
		s.m.emptyQueries++
		s.retryQuery(att, s.latency())
		return
	}
	att.job = es[0].job
	att.drv = claim.NewDriver(s.jobs[att.job].view, s.c.R)
	s.act(att, att.drv.Next(), s.latency())
}

type indexEntryRef struct{ job int32 }

// lacking reports whether a node answered that it does not hold the job.
func lacking(replies []claim.Reply) bool {
	for _, r := range replies {
		if r.Kind == claim.DontCare {
			return true
		}
	}
	return false
}

func (s *Sim) retryQuery(att *attempt, delay int64) {
	att.tries++
	if int(att.tries) < s.c.FindTries {
		s.startQuery(att, delay)
		return
	}
	s.attemptEnd(att, claim.Unknown, delay)
}

// act performs the driver's action, delay ms from now.
func (s *Sim) act(att *attempt, a claim.Action, delay int64) {
	if a.Ask != "" {
		id, gen := parseName(a.Ask)
		s.e.after(delay+s.latency(), event{kind: evAsk, node: id, gen: gen, att: att})
	}
	if len(a.Confirm) > 0 {
		if att.start == 0 { // a confirm to spares keeps the claim's start
			att.start = s.e.now + delay
		}
		for _, nd := range a.Confirm {
			id, gen := parseName(nd)
			s.e.after(delay+s.latency(), event{kind: evConfirm, node: id, gen: gen, att: att})
		}
	}
	repair := a.Done == claim.Failed && lacking(att.replies)
	for _, nd := range a.Release {
		id, gen := parseName(nd)
		ev := event{kind: evRelease, node: id, gen: gen, att: att}
		if repair { // the nearest granting node (claimclient.releaseFailed)
			ev.arg, repair = 1, false
		}
		s.e.after(delay+s.latency(), ev)
	}
	if a.Done != claim.Pending {
		s.attemptEnd(att, a.Done, delay)
	}
}

// heldState returns node id's replica of j with expiry applied.
func (s *Sim) heldState(id, j int32) (*replica, job.State) {
	rep := s.nodes[id].jobs[j]
	if rep == nil {
		return nil, job.State{}
	}
	return rep, s.lapse(id, j, rep.st)
}

// claimsOf is node id's claim machine, the one claimnet steps on a node.
func (s *Sim) claimsOf(id int32) *claim.Server[int32] {
	n := &s.nodes[id]
	if n.claims == nil {
		n.claims = claim.NewServer[int32](ms(s.c.TClaim), claim.DefaultTSkew)
	}
	return n.claims
}

// ask: a claim request arrives; the node's claim machine answers (Grant,
// claim.Decide).
func (s *Sim) ask(ev event) {
	att := ev.att
	name := nodeName(ev.node, ev.gen)
	if att.drv == nil {
		return
	}
	if !s.reach(att.side, ev.node, ev.gen) {
		s.act(att, att.drv.Answer(name, false, 0, nil), ms(s.c.RPCTimeout))
		return
	}
	if s.fault[ev.node] == Silent {
		s.act(att, att.drv.Answer(name, false, 0, nil), ms(s.c.RPCTimeout))
		return
	}
	s.count(ev.node, kClaim, s.c.SizeState)
	rep, st := s.heldState(ev.node, att.job)
	var d claim.Decision
	switch s.fault[ev.node] {
	case Deny:
		d = claim.Decision{Kind: claim.Denied}
	case Forge:
		d = claim.Decision{Kind: claim.Granted}
	default:
		// No other copy: the simulator models no units (each job its own).
		d = s.claimsOf(ev.node).Grant(att.job, rep != nil, st, att.client, false, s.nowAt(ev.node)).Decision
	}
	att.replies = append(att.replies, claim.Reply{Node: name, Kind: d.Kind, At: s.nowAt(ev.node)})
	s.act(att, att.drv.Answer(name, true, d.Kind, nil), s.latency())
}

// amongClosest is CheckConfirm's test that a replier is one of the job's
// nodes: among the r + claim.NearExtra closest live nodes in the
// confirming node's view (the nodes' rule, claimnet's nearRule).
func (s *Sim) amongClosest(name string, j int32, side int8) bool {
	id, gen := parseName(name)
	if !s.reachable(id, gen) {
		return false
	}
	s.scratch2 = s.view(side).closest(s.jobs[j].pos, s.c.R+claim.NearExtra, s.scratch2[:0])
	for _, v := range s.scratch2 {
		if v == id {
			return true
		}
	}
	return false
}

// confirm: the client's confirm arrives; the node's claim machine checks
// it (Confirm, claim.CheckConfirm) and, once merged, keeps it (Applied).
func (s *Sim) confirm(ev event) {
	att := ev.att
	name := nodeName(ev.node, ev.gen)
	if !s.reach(att.side, ev.node, ev.gen) || s.fault[ev.node] == Silent {
		s.act(att, att.drv.Confirmed(name, false), ms(s.c.RPCTimeout))
		return
	}
	s.count(ev.node, kClaim, s.c.SizeState*(1+len(att.replies)))
	rep, st := s.heldState(ev.node, att.job)
	ok := s.fault[ev.node] == Forge // accepts every confirm, keeps no claim
	if rep != nil && (s.fault[ev.node] == Honest || s.fault[ev.node] == Withhold) {
		side := s.nodes[ev.node].side
		near := func(nd string) bool { return s.amongClosest(nd, att.job, side) }
		now := s.nowAt(ev.node)
		srv := s.claimsOf(ev.node)
		p, err := srv.Confirm(att.job, st, att.client, att.replies, s.c.ClaimQuorum, near,
			att.start, s.jobs[att.job].tFinish, now)
		if err == nil {
			if m := job.Merge(rep.st, p.State); !job.Equal(m, rep.st) {
				s.setState(ev.node, att.job, rep, m)
			}
			_, _, err = srv.Applied(p, rep.st, now) // one event: nothing released meanwhile
			if err == nil {
				att.won = p.State
				s.watchSoon(ev.node, s.e.now+ms(s.c.TCert))
			}
		}
		ok = err == nil
	}
	if ok {
		s.accepts[claimRef{job: att.job, start: att.start, client: string(att.client)}]++
	}
	if s.onConfirmed != nil {
		s.onConfirmed(att, name, ok)
	}
	s.act(att, att.drv.Confirmed(name, ok), s.latency())
}

// certify: a won claim's certificate arrives (claimnet's handleCertify): a
// node holding the job merges the claim, proven by the q acceptances it
// carries — the spare and a node whose confirm was lost learn the claim
// here. ev.arg is the number of replies (the request's size).
func (s *Sim) certify(ev event) {
	att := ev.att
	if att.certTaken && ev.arg >= 0 {
		return // the result carried it, or a release sent it at once
	}
	if !s.reach(att.side, ev.node, ev.gen) || s.fault[ev.node] == Silent {
		return
	}
	s.count(ev.node, kClaim, s.c.SizeState*(1+abs32(ev.arg)))
	rep, _ := s.heldState(ev.node, att.job)
	if rep == nil || att.won.Phase != job.Claimed || (s.fault[ev.node] != Honest && s.fault[ev.node] != Withhold) {
		return
	}
	if m := job.Merge(rep.st, att.won); !job.Equal(m, rep.st) {
		s.setState(ev.node, att.job, rep, m)
	}
}

// sendCertify sends att's certificate to every node that answered its
// claim, after wait ms. Sent as taken over (a release sends it at once),
// ev.arg is negative: the certify counts however certTaken is set.
func (s *Sim) sendCertify(att *attempt, wait int64) {
	n := int32(len(att.replies))
	if att.certTaken {
		n = -n
	}
	for _, r := range att.replies {
		id, gen := parseName(r.Node)
		s.e.after(wait+s.latency(), event{kind: evCertify, node: id, gen: gen, att: att, arg: n})
	}
}

// takeCertify stops att's certificate from going on its own when it has
// not gone yet, and reports whether it did.
func (s *Sim) takeCertify(att *attempt) bool {
	if att.certTaken || s.e.now >= att.certDue {
		return false
	}
	att.certTaken = true
	return true
}

func abs32(n int32) int {
	if n < 0 {
		return int(-n)
	}
	return int(n)
}

// release: the client gives back a temporary or permanent claim.
func (s *Sim) release(ev event) {
	att := ev.att
	if !s.reach(att.side, ev.node, ev.gen) {
		return
	}
	s.count(ev.node, kClaim, s.c.SizeState)
	rep, st := s.heldState(ev.node, att.job)
	if rep == nil {
		return
	}
	s.claimsOf(ev.node).EndTemp(att.job, att.client)
	if ev.arg == 1 {
		s.resync(ev.node, att.job)
	}
	if rel, ok := claim.Release(st, att.client, s.nowAt(ev.node)); ok {
		s.setState(ev.node, att.job, rep, job.Merge(rep.st, rel))
	}
}

// attemptEnd: the driver finished, delay ms from now at the client.
func (s *Sim) attemptEnd(att *attempt, out claim.Outcome, delay int64) {
	if s.onAttemptEnd != nil { // a scripted run (Script): the script goes on
		s.onAttemptEnd(att, out)
		att.drv = nil
		return
	}
	if out != claim.Won {
		s.m.failedAttempts++
		if att.job < 0 {
			s.m.notFound++
		} else {
			s.m.outcomes[out]++
		}
		att.drv = nil
		// A fresh attempt of the same client: events of this one may
		// still be in flight (releases).
		next := &attempt{id: att.id, client: att.client, job: -1, loop: att.loop, retries: att.retries + 1, born: att.born}
		switch {
		case att.loop:
			s.e.after(delay+s.e.uniform(ms(s.c.ClientPoll)/2, 3*ms(s.c.ClientPoll)/2), event{kind: evClaimStart, att: next})
		case att.retries < 5 && s.claimsWanted():
			s.e.after(delay+1000, event{kind: evClaimStart, att: next})
		}
		return
	}
	s.m.claimed++
	s.m.claimLatency = append(s.m.claimLatency, s.e.now+delay-att.born)
	// The certificate goes to every node that answered the claim after
	// the certify delay (claimclient: certify.go), beside what follows,
	// unless the result or a release takes it over first.
	wait := max(ms(s.c.CertifyDelay), 0)
	att.certDue = s.e.now + delay + wait
	s.sendCertify(att, delay+wait)
	// The client fetches the job's spec from the nearest of its nodes
	// (client.FetchSpec, /up/job/get).
	if len(att.replies) > 0 {
		id, _ := parseName(att.replies[0].Node)
		s.count(id, kJob, s.c.SizeJob)
	}
	r := &s.jobs[att.job]
	if !r.claimed {
		r.claimed = true
		s.m.claimedJobs++
	}
	if r.gtClient != 0 && r.gtClient != att.id && !r.gtEnded && s.e.now < r.gtUntil {
		s.m.doubleClaims++
		if s.beyondF(att.job) {
			s.m.doublesBeyondF++
		}
	}
	r.gtClient, r.gtUntil, r.gtEnded = att.id, att.start+r.tFinish, false
	att.drv = nil
	switch s.c.Workload {
	case Static:
		if s.resultsAt > 0 {
			// Won after the claim phase timed out (endClaims).
			s.e.at(max(s.resultsAt, s.e.now+delay), event{kind: evClientDone, att: att})
			break
		}
		s.running = append(s.running, att)
		if s.m.claimedJobs+s.m.lostUnclaimed() >= s.c.Jobs {
			s.startResults()
		}
	case Dynamic:
		s.e.after(delay+ms(s.c.JobLength), event{kind: evClientDone, att: att})
	case Trace:
		att.fate = s.trace.fate()
		run := r.run
		if att.fate == fateError {
			run = s.e.uniform(0, run)
		}
		s.e.after(delay+run, event{kind: evClientDone, att: att})
	}
}

// upReplier is the first node that answered att's claim and is up in the
// same run, or -1.
func (s *Sim) upReplier(att *attempt) int32 {
	for _, rp := range att.replies {
		if id, gen := parseName(rp.Node); s.reachable(id, gen) {
			return id
		}
	}
	return -1
}

// clientDone: the client finished computing: it sends the result to the
// job's nodes it claimed at, or releases the claim (client error), or
// says nothing (time-out: the claim lapses at T_finish).
func (s *Sim) clientDone(att *attempt) {
	r := &s.jobs[att.job]
	now := s.e.now
	switch att.fate {
	case fateOK:
		att.doneAt = now
		s.takeCertify(att) // the result carries the certificate to the nodes outside the claim
		// The result goes to the nodes the client claimed at; only if
		// none of them can store it (churn, moves) does the client look
		// the job up again and send it to the current r closest
		// (claimnet.SubmitResult).
		acks := 0
		att.sent = att.sent[:0]
		for _, rp := range att.replies {
			id, _ := parseName(rp.Node)
			att.sent = append(att.sent, id)
		}
		for _, rp := range att.replies {
			id, gen := parseName(rp.Node)
			if s.reachable(id, gen) && (s.nodes[id].jobs[att.job] != nil || s.fault[id] == Drop) {
				acks++ // a withholding or dropping node acknowledges what it keeps nowhere
			}
			s.e.after(s.latency(), event{kind: evResult, node: id, gen: gen, att: att})
		}
		// Delivered once a majority of the job's replicas acknowledged it.
		// Short of that the client asks one near question of a node it
		// claimed at that is up (dht.NearVia: its live nearest), and
		// looks the job up only when none is.
		if r0 := &s.rings[0]; acks < s.c.R/2+1 && r0.len() > 0 {
			gw := &s.nodes[r0.id[s.e.rng.IntN(r0.len())]]
			var lat int64
			if via := s.upReplier(att); via >= 0 {
				s.near(lkResult, via)
				lat = s.rtt()
			} else {
				lat = s.lookup(lkResult, gw.cache, gw.pos, gw.side, r.pos)
			}
			for _, id := range s.view(gw.side).closest(r.pos, s.c.R, nil) {
				if !slices.Contains(att.sent, id) {
					att.sent = append(att.sent, id)
				}
				s.e.after(lat+s.rtt()+s.latency(), event{kind: evResult, node: id, gen: s.nodes[id].gen, att: att})
			}
		}
		if r.gtClient == att.id {
			r.gtEnded = true
		}
	case fateError:
		// A release waits for the certificate's delivery, sent at once
		// if it still waited (claimclient.Release).
		wait := int64(0)
		if s.takeCertify(att) {
			s.sendCertify(att, 0)
			wait = s.rtt()
		}
		for _, rp := range att.replies {
			id, gen := parseName(rp.Node)
			s.e.after(wait+s.latency(), event{kind: evRelease, node: id, gen: gen, att: att})
		}
		if r.gtClient == att.id {
			r.gtEnded = true
		}
	}
	if att.loop {
		next := s.newAttempt(true)
		s.e.after(1000, event{kind: evClaimStart, att: next})
	}
}

// result: a client's result arrives at a replica, which stores it and,
// when that finishes the job here, passes it on (passOn).
func (s *Sim) result(ev event) {
	att := ev.att
	if !s.reach(att.side, ev.node, ev.gen) {
		return
	}
	s.count(ev.node, kJob, s.c.SizeResult)
	rep := s.nodes[ev.node].jobs[att.job]
	if rep == nil || s.fault[ev.node] == Withhold {
		return
	}
	fin := job.State{Phase: job.Finished, Client: att.client, At: att.doneAt, Result: att.client}
	if m := s.receive(ev.node, att.job, rep.st, fin); !job.Equal(m, rep.st) {
		s.setState(ev.node, att.job, rep, m)
		s.passOn(ev.node, att.job, m, att.sent)
	}
}

// startResults ends a static run's claim phase: the clients that won run
// their jobs for RunIdle and send their results at Rate.
func (s *Sim) startResults() {
	s.resultsAt = s.e.now + ms(s.c.RunIdle)
	for k, a := range s.running {
		s.e.at(s.resultsAt+int64(float64(k)*1000/s.c.Rate), event{kind: evClientDone, att: a})
	}
	s.running = nil
}

// endClaims: a static run's claim phase timed out (Config.ClaimWindow)
// with jobs never claimed (unclaimable: faults beyond f); the results
// phase starts without them, and they count as abandoned.
func (s *Sim) endClaims() {
	if s.resultsAt > 0 {
		return
	}
	for j := range s.jobs {
		if r := &s.jobs[j]; !r.claimed && !r.lost && !r.swallowed {
			s.m.abandoned++
		}
	}
	s.startResults()
}
