package sim

import replicarule "github.com/up-pool/up/replica"

// The real nodes' liveness probes (dht.Prober), as a republish round runs
// them: before it plans, the round pings each peer its jobs' views name,
// once, unless it heard from that peer within Config.ProbeFresh
// (overlay.Endpoint.HeardWithin: a reply received or a request served on
// a live connection). A restart of either side drops the connection and
// what was heard over it. The simulator's views are the live ring, so
// every ping is answered; what it counts is how many the traffic already
// flowing leaves to send. The index writer's probes of its full rounds
// (indexwriter's rank and dropDeadTargets) are not modelled.

// heard is when a node last heard from a peer, and in which of the peer's
// runs (node.runs).
type heard struct {
	run uint32
	at  int64 // ms
}

// hear records that nodes a and b exchanged an RPC now: each heard the
// other.
func (s *Sim) hear(a, b int32) {
	if a == b || a < 0 || b < 0 {
		return
	}
	na, nb := &s.nodes[a], &s.nodes[b]
	if na.heard != nil {
		na.heard[b] = heard{run: nb.runs, at: s.e.now}
	}
	if nb.heard != nil {
		nb.heard[a] = heard{run: na.runs, at: s.e.now}
	}
}

// hearFrom records that node id took batch b from its sender, if that
// sender is still up in the same run.
func (s *Sim) hearFrom(b *batch, id int32) {
	if s.reachable(b.from, b.fromGen) {
		s.hear(b.from, id)
	}
}

// heardFresh reports whether node a heard from peer p within ProbeFresh,
// in p's present run.
func (s *Sim) heardFresh(a, p int32) bool {
	if s.c.ProbeFresh < 0 {
		return false
	}
	h, ok := s.nodes[a].heard[p]
	return ok && h.run == s.nodes[p].runs && s.e.now-h.at < ms(s.c.ProbeFresh)
}

// probeRound is node id's round prober over its jobs' views: a ping to
// each distinct peer not heard from lately.
func (s *Sim) probeRound(id int32, jobs []replicarule.RoundJob[int32]) {
	seen := map[int32]bool{}
	for _, j := range jobs {
		for _, p := range j.View {
			if p == id || seen[p] {
				continue
			}
			seen[p] = true
			if s.heardFresh(id, p) {
				continue
			}
			s.count(p, kPing, s.c.SizePing)
			s.hear(id, p)
		}
	}
}
