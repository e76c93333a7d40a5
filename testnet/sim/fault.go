package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
)

// Behaviour is how a Byzantine node misbehaves (issue 17's fault model).
type Behaviour uint8

// Behaviours. Honest is every other node; the rest are assigned round-robin
// among the Byzantine nodes (Config.Behaviours).
const (
	Honest   Behaviour = iota
	Deny               // denies every claim and refuses every confirm; stores and syncs as an honest node
	Drop               // accepts every job and stores nothing: it never holds a replica
	Forge              // grants every claim and accepts every confirm, keeping no claim; sends forged finished and collected states in its republish rounds
	Silent             // never answers a claim request or confirm
	Withhold           // acknowledges results and stores none, and serves none it learns of
	numBehaviours
)

var behaviourNames = [numBehaviours]string{"honest", "deny", "drop", "forge", "silent", "withhold"}

func (b Behaviour) String() string {
	if b < numBehaviours {
		return behaviourNames[b]
	}
	return fmt.Sprintf("behaviour(%d)", b)
}

// AllBehaviours are the faulty behaviours, the default of Config.Behaviours.
func AllBehaviours() []Behaviour { return []Behaviour{Deny, Drop, Forge, Silent, Withhold} }

// ParseBehaviours reads a comma-separated list of behaviour names
// ("deny,drop,forge,silent,withhold"); an empty list is all of them.
func ParseBehaviours(list string) ([]Behaviour, error) {
	if strings.TrimSpace(list) == "" {
		return AllBehaviours(), nil
	}
	var out []Behaviour
	for _, name := range strings.Split(list, ",") {
		i := slices.Index(behaviourNames[:], strings.TrimSpace(name))
		if i <= int(Honest) {
			return nil, fmt.Errorf("%w: unknown behaviour %q (want some of deny, drop, forge, silent, withhold)", ErrConfig, name)
		}
		out = append(out, Behaviour(i))
	}
	return out, nil
}

// jumpMS is how far a jumping clock jumps ahead: one hour.
const jumpMS = int64(time.Hour / time.Millisecond)

// clockOf is a node slot's clock: an offset and a jump.
type clockOf struct {
	offset int64 // ms added to the true time
	jumpAt int64 // true time of the +1 h jump; 0: never
}

// assignFaults gives node slots their behaviour and clock from their own
// PCG stream (seeded by Config.Seed), so a run without faults draws
// nothing and replays exactly as before.
func (s *Sim) assignFaults() {
	c := &s.c
	s.fault = make([]Behaviour, c.Nodes)
	s.clock = make([]clockOf, c.Nodes)
	if c.Byzantine == 0 && c.Skewed == 0 && c.Jump == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x6661756c74)) // "fault"
	pick := func(frac float64) []int {
		return rng.Perm(c.Nodes)[:int(frac*float64(c.Nodes)+0.5)]
	}
	for k, id := range pick(c.Byzantine) {
		s.fault[id] = c.Behaviours[k%len(c.Behaviours)]
	}
	skew := ms(c.Skew)
	for _, id := range pick(c.Skewed) {
		s.clock[id].offset = rng.Int64N(2*skew+1) - skew
	}
	span := s.jumpSpan()
	for _, id := range pick(c.Jump) {
		s.clock[id].jumpAt = 1 + rng.Int64N(span)
	}
}

// jumpSpan is the time within which jumping clocks jump: the static
// workload's submission, claim and run phases, or the run's duration.
func (s *Sim) jumpSpan() int64 {
	if s.c.Workload == Static {
		phase := int64(float64(s.c.Jobs) / s.c.Rate * 1000)
		return max(2*phase+ms(s.c.Gap)+ms(s.c.RunIdle), 1)
	}
	return max(ms(s.c.Duration), 1)
}

// now is node id's clock: the true time, its offset, and its jump once it
// happened.
func (s *Sim) nowAt(id int32) int64 {
	k := s.clock[id]
	t := s.e.now + k.offset
	if k.jumpAt > 0 && s.e.now >= k.jumpAt {
		t += jumpMS
	}
	return t
}

// lapse is the state node id reads from a held state: job.Lapse on its
// own clock, with T_skew.
func (s *Sim) lapse(id, j int32, st job.State) job.State {
	return job.Lapse(st, s.nowAt(id), s.jobs[j].tFinish, claim.DefaultTSkew)
}

// receive is the state node id keeps when in arrives while it holds held
// (job.Receive on its own clock).
func (s *Sim) receive(id, j int32, held, in job.State) job.State {
	if (in.Phase == job.Claimed || in.IsTombstone()) && !s.certified(j, in) {
		// Its proof fails the receiver's check (pool.applyFrom →
		// claim.CheckClaimProof): a confirm this node's sender accepted
		// for a claim that never reached a quorum.
		s.m.uncertifiedRefused++
		return held
	}
	return job.Receive(held, in, s.nowAt(id), s.jobs[j].tFinish, claim.DefaultTSkew)
}

// claimRef names one claim: a job, the claim's start and its client.
type claimRef struct {
	job    int32
	start  int64
	client string
}

// certified reports whether the claim of st (claimed, or its tombstone)
// on job j has a certificate: a quorum of nodes accepted its confirm.
func (s *Sim) certified(j int32, st job.State) bool {
	return s.accepts[claimRef{job: j, start: st.Start, client: string(st.Client)}] >= s.c.ClaimQuorum
}

// faultyAmong counts the faulty nodes among ids: Byzantine ones and
// those whose clock jumps (an hour ahead, a node refuses every confirm:
// the claim's start is beyond T_skew of its clock).
func (s *Sim) faultyAmong(ids []int32) int {
	n := 0
	for _, id := range ids {
		if s.fault[id] != Honest || s.clock[id].jumpAt > 0 {
			n++
		}
	}
	return n
}

// markFaulty records, for a job just created, how many of its r closest
// nodes (in the true overlay) are faulty (faultyAmong).
func (s *Sim) markFaulty(j int32) {
	var buf [8]int32
	s.jobs[j].faulty = int8(s.faultyAmong(s.rings[0].closest(s.jobs[j].pos, s.c.R, buf[:0])))
}

// beyondF reports whether job j had more than f faulty replicas.
func (s *Sim) beyondF(j int32) bool { return int(s.jobs[j].faulty) > claim.Faults(s.c.R) }

// forgeRound is a forging node's lie in its republish round: for each job
// it holds that is not finished, a forged finished or collected state
// (alternately) to each of the job's other nodes. Honest receivers check
// the proof (pool.applyFrom → checkProof) and refuse it: sync counts
// them, and they change no replica.
func (s *Sim) forgeRound(id int32, add func(t int32, it syncItem)) {
	n := &s.nodes[id]
	v := s.view(n.side)
	for _, j := range sortedKeys(n.jobs) {
		if n.jobs[j].st.Phase >= job.Finished {
			continue
		}
		st := job.State{Phase: job.Collected, At: s.e.now}
		if j%2 == 0 {
			st = job.State{Phase: job.Finished, Client: []byte("forged"), At: s.e.now, Result: []byte("forged")}
		}
		var buf [8]int32
		for _, t := range v.closest(s.jobs[j].pos, s.c.R, buf[:0]) {
			if t != id {
				add(t, syncItem{job: j, st: st, forged: true})
			}
		}
	}
}

// percentile is the p-quantile (0..1) of xs, sorted in place; 0 for none.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(p*float64(len(xs)-1) + 0.5)
	return xs[i]
}

// FaultFigures are a run's figures under the fault model (issue 17).
type FaultFigures struct {
	Byzantine  float64 `json:"byzantine"`  // share of nodes Byzantine
	Behaviours string  `json:"behaviours"` // their behaviours, round-robin
	Skewed     float64 `json:"skewed"`     // share of clocks skewed
	SkewS      float64 `json:"skew_s"`     // clock offsets uniform in ±this
	Jump       float64 `json:"jump"`       // share of clocks that jump +1 h
	F          int     `json:"f"`          // faults tolerated per job (claim.Faults)
	// BeyondF counts jobs with more than f faulty nodes (Byzantine, or a
	// clock that jumps) among their r closest at creation.
	BeyondF int `json:"beyond_f"`
	// Unclaimable counts jobs never claimed by the end; UnclaimableBeyondF
	// those of them beyond f.
	Unclaimable        int `json:"unclaimable"`
	UnclaimableBeyondF int `json:"unclaimable_beyond_f"`
	LostBeyondF        int `json:"lost_beyond_f"`    // lost jobs beyond f
	DoubleBeyondF      int `json:"doubles_beyond_f"` // double claims on jobs beyond f
	// ClaimP50 and ClaimP99 are the claim latency quantiles: from a
	// client's first index query to its won claim, retries included.
	ClaimP50 time.Duration `json:"-"`
	ClaimP99 time.Duration `json:"-"`
	P50S     float64       `json:"claim_p50_s"`
	P99S     float64       `json:"claim_p99_s"`
	// ForgedRefused counts forged finished/collected states honest nodes
	// refused.
	ForgedRefused int `json:"forged_refused"`
	// Resubmitted counts jobs the project sent again through another of
	// their closest nodes, its store having failed or come back with
	// fewer than claim.ReceiptsNeeded signed receipts (submit.go).
	Resubmitted int `json:"resubmitted"`
	// GivenUp counts submissions the project gave up after
	// Config.FirstNodes first nodes (project.ErrTooFewReplicas); the job
	// may still be held by the nodes that stored it.
	GivenUp int `json:"given_up"`
	// Swallowed counts given-up jobs that no node ever stored.
	Swallowed int `json:"swallowed"`
	Lost      int `json:"lost"`    // jobs lost: every replica gone, or swallowed
	Doubles   int `json:"doubles"` // double claims
	Jobs      int `json:"jobs"`    // jobs submitted
}

// faultFigures computes the run's FaultFigures.
func (s *Sim) faultFigures() FaultFigures {
	c := s.c
	var names []string
	for _, b := range c.Behaviours {
		names = append(names, b.String())
	}
	ff := FaultFigures{Byzantine: c.Byzantine, Behaviours: strings.Join(names, ","), Skewed: c.Skewed,
		SkewS: c.Skew.Seconds(), Jump: c.Jump, F: claim.Faults(c.R), ForgedRefused: s.m.forgedRefused,
		DoubleBeyondF: s.m.doublesBeyondF, Resubmitted: s.m.resubmitted, GivenUp: s.m.givenUp,
		Swallowed: s.m.swallowed, Lost: s.m.lost + s.m.swallowed,
		Doubles: s.m.doubleClaims, Jobs: s.m.submitted}
	for j := range s.jobs {
		beyond := s.beyondF(int32(j))
		if beyond {
			ff.BeyondF++
			if s.jobs[j].lost || s.jobs[j].swallowed {
				ff.LostBeyondF++
			}
		}
		if !s.jobs[j].claimed {
			ff.Unclaimable++
			if beyond {
				ff.UnclaimableBeyondF++
			}
		}
	}
	lat := slices.Clone(s.m.claimLatency)
	ff.ClaimP50 = time.Duration(percentile(lat, 0.5)) * time.Millisecond
	ff.ClaimP99 = time.Duration(percentile(lat, 0.99)) * time.Millisecond
	ff.P50S, ff.P99S = ff.ClaimP50.Seconds(), ff.ClaimP99.Seconds()
	return ff
}
