package sim

import (
	"slices"

	"github.com/up-pool/up/claim"
)

// The project's submission with signed store receipts (project.Submit,
// submitBatch, resubmit; docs/design.md, "a job counts submitted only on
// r − f certified nodes' signed store receipts"). The project sends a job
// to a first node, which places it on the job's r closest and answers
// with the receipts of the nodes that stored it, its own among them when
// it is one of the r. The job counts submitted once the project holds
// receipts from claim.ReceiptsNeeded(r) distinct nodes (4 of 5), summed
// over its first nodes; short of that, or when the store fails, it goes
// through the job's next closest node not tried yet, at most
// Config.FirstNodes (replica.MaxFirstNodes) first nodes.
//
// The simulator carries no signatures: a receipt is the node that would
// sign it. Every node a placement push reaches signs, a Drop node too
// (it acknowledges and keeps nothing: the worst case for the project,
// whose count then includes a node that holds no copy); a Drop first node
// places nothing and answers with its own receipt alone, the only one it
// can make.

// submission is the project's submission of one job while it is in
// progress: the first nodes it sent the job through and the distinct
// nodes whose receipts it holds.
type submission struct {
	tried   []int32 // first nodes (node slots), in order
	signers []int32 // nodes whose receipts the project holds, distinct
}

// storeCall is one store through a first node, from its arrival there to
// its answer: the placement pushes in flight and the receipts they
// brought.
type storeCall struct {
	job      int32
	first    int32
	firstGen uint32
	self     bool    // the first node keeps a replica (it is among the job's r closest): it signs its own receipt
	pending  int     // placement pushes not answered yet (failed ones re-planned count again)
	signers  []int32 // nodes that signed a receipt
	done     bool
}

// submissionOf is job j's submission, started when it has none.
func (s *Sim) submissionOf(j int32) *submission {
	r := &s.jobs[j]
	if r.sub == nil {
		r.sub = &submission{}
	}
	return r.sub
}

// placed: a placement push of call reached node id, which signs a
// receipt; the call is answered once its last push is.
func (s *Sim) placed(call *storeCall, id int32) {
	if !slices.Contains(call.signers, id) {
		call.signers = append(call.signers, id)
	}
	s.pushDone(call, 2) // the push's answer, then the store's
}

// pushDone: one placement push of call ended (answered, given up, or its
// sender gone); when it was the last, the first node answers the project,
// hops messages later.
func (s *Sim) pushDone(call *storeCall, hops int) {
	call.pending--
	if call.pending <= 0 {
		s.answer(call, hops)
	}
}

// answer: the first node's answer to the project's store arrives hops
// one-way latencies from now. A first node that died with the call open
// never answers: the project's call times out, it marks the node dead and
// goes on to the next.
func (s *Sim) answer(call *storeCall, hops int) {
	if call.done {
		return
	}
	call.done = true
	if !s.reachable(call.first, call.firstGen) {
		s.m.failedStores++
		s.e.after(ms(s.c.RPCTimeout), event{kind: evSubmit, job: call.job, arg: 3, node: call.first, gen: call.firstGen})
		return
	}
	if call.self && !slices.Contains(call.signers, call.first) {
		call.signers = append(call.signers, call.first)
	}
	delay := int64(0)
	for range hops {
		delay += s.latency()
	}
	s.e.after(delay, event{kind: evStored, job: call.job, node: call.first, gen: call.firstGen, bat: &batch{call: call}})
}

// stored: a first node's answer reaches the project, which adds the
// receipts to those it holds; short of claim.ReceiptsNeeded it sends the
// job through the next of its closest.
func (s *Sim) stored(ev event) {
	j := ev.job
	sub := s.submissionOf(j)
	for _, id := range ev.bat.call.signers {
		if !slices.Contains(sub.signers, id) {
			sub.signers = append(sub.signers, id)
		}
	}
	if len(sub.signers) >= claim.ReceiptsNeeded(s.c.R) {
		s.jobs[j].sub = nil
		return
	}
	s.m.shortStores++
	s.resubmit(j)
}

// resubmit: the project's store of job j failed or came back short. As
// project.resubmit does, it looks the job up afresh and sends it to the
// closest live node it has not tried and has not marked dead, unless it
// tried Config.FirstNodes already; then it gives the submission up.
func (s *Sim) resubmit(j int32) {
	sub := s.submissionOf(j)
	if len(sub.tried) >= s.c.FirstNodes {
		s.giveUp(j)
		return
	}
	t := s.jobs[j].pos
	lat := s.lookup(lkSubmit, nil, s.projPos, 0, t)
	s.scratch = s.view(0).closest(t, s.c.R, s.scratch[:0])
	for _, c := range s.scratch {
		if !slices.Contains(sub.tried, c) && !s.markedDead(c, s.nodes[c].gen) {
			s.m.resubmitted++
			s.e.after(lat+s.latency(), event{kind: evStore, node: c, gen: s.nodes[c].gen, job: j})
			return
		}
	}
	s.giveUp(j)
}

// giveUp: the project ends job j's submission short of its receipts
// (project.ErrTooFewReplicas). A job no node holds then was never stored:
// it is swallowed, and counts as lost.
func (s *Sim) giveUp(j int32) {
	r := &s.jobs[j]
	r.sub = nil
	s.m.givenUp++
	if r.live == 0 && !r.lost && !r.collected {
		r.swallowed = true
		s.m.swallowed++
	}
}
