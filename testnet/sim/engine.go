package sim

import "math/rand/v2"

// evKind names what an event does when it fires. The simulator's dispatch
// (sim.go) switches on it; the engine only orders events.
type evKind uint8

const (
	evTick          evKind = iota // one simulated second passed: metrics
	evSubmit                      // the project submits its next job
	evStore                       // a job arrives at its closest node from the project
	evRepublish                   // a node's republish round
	evSync                        // a republish batch arrives at a replica
	evSyncReply                   // the replica's newer states arrive back
	evRewrite                     // an index entry's T_rewrite is due at its writer
	evFlush                       // a writer sends its queued index writes and withdrawals
	evIndexWrite                  // a batch of index writes arrives at an index node
	evIndexWithdraw               // a batch of withdrawals arrives at an index node
	evIndexExpire                 // an index node expires entries
	evClaimStart                  // a client starts looking for a job
	evQuery                       // a client's index query arrives
	evAsk                         // a claim request arrives at a replica
	evConfirm                     // a claim confirm arrives at a replica
	evRelease                     // a claim release arrives at a replica
	evClientDone                  // a client finished (or gave up) computing a job
	evResult                      // a result arrives at a replica
	evHarvest                     // the project's harvest round
	evCollected                   // a collected notice arrives at a replica
	evBalance                     // a node's load-balancing round
	evReact                       // a node balances with one whose reply carried a load to react to
	evCrash                       // a node crashes (churn)
	evJoin                        // a node rejoins as a new node (churn)
	evPartition                   // a partition starts or heals
	evSyncFailed                  // a sync's time-out at its sender: node, gen the sender, job the target that failed, arg the sync's kind
	evHandOn                      // a node hands jobs on to a newcomer: job the newcomer's slot, arg its incarnation
	evStored                      // a first node's answer to the project's store, with its receipts, arrives (bat.call)
	evCertify                     // a won claim's certificate arrives at a node that answered the claim
	evCertWatch                   // a node's certificate watch round (certwatch.go)
	evRepair                      // a node repairs the jobs whose r closest a departed node was among: job the departed's slot
	nEvKinds
)

// event is one scheduled happening. It is a small value (no closures): the
// fields say which node (and which incarnation of it: gen), which job and
// what payload; stale events (a node that crashed or moved since) are
// recognised by gen and dropped.
type event struct {
	at   int64  // virtual time, ms
	seq  uint64 // scheduling order: ties in at fire first-scheduled first
	kind evKind
	node int32  // the node (or client slot) the event happens at
	gen  uint32 // the node's incarnation when the event was scheduled
	job  int32
	arg  int32
	att  *attempt // claim attempt in flight (client events)
	bat  *batch   // payload of batched messages
}

// Engine is the discrete-event core: a virtual clock in milliseconds, a
// heap of events ordered by (time, scheduling order), and the seeded PCG
// source every random choice of a run draws from, so a run replays exactly
// from its seed.
type Engine struct {
	now  int64
	seq  uint64
	heap []event
	rng  *rand.Rand
	// Fired counts events fired, by kind.
	Fired [nEvKinds]uint64
}

// NewEngine returns an engine at time 0 whose randomness comes from PCG
// seeded with seed.
func NewEngine(seed uint64) *Engine {
	return &Engine{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Now is the virtual time in ms.
func (e *Engine) Now() int64 { return e.now }

// Rand is the run's random source.
func (e *Engine) Rand() *rand.Rand { return e.rng }

// Pending is the number of scheduled events.
func (e *Engine) Pending() int { return len(e.heap) }

// at schedules ev at time t (never before now).
func (e *Engine) at(t int64, ev event) {
	ev.at = max(t, e.now)
	ev.seq = e.seq
	e.seq++
	e.heap = append(e.heap, ev)
	e.up(len(e.heap) - 1)
}

// after schedules ev d ms from now.
func (e *Engine) after(d int64, ev event) { e.at(e.now+d, ev) }

// next pops the earliest event and advances the clock to it.
func (e *Engine) next() (event, bool) {
	if len(e.heap) == 0 {
		return event{}, false
	}
	ev := e.heap[0]
	last := len(e.heap) - 1
	e.heap[0] = e.heap[last]
	e.heap[last] = event{}
	e.heap = e.heap[:last]
	if last > 0 {
		e.down(0)
	}
	e.now = ev.at
	e.Fired[ev.kind]++
	return ev, true
}

// peek returns the time of the earliest event.
func (e *Engine) peek() (int64, bool) {
	if len(e.heap) == 0 {
		return 0, false
	}
	return e.heap[0].at, true
}

func (e *Engine) less(i, j int) bool {
	a, b := &e.heap[i], &e.heap[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (e *Engine) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(i, p) {
			return
		}
		e.heap[i], e.heap[p] = e.heap[p], e.heap[i]
		i = p
	}
}

func (e *Engine) down(i int) {
	n := len(e.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && e.less(r, l) {
			m = r
		}
		if !e.less(m, i) {
			return
		}
		e.heap[i], e.heap[m] = e.heap[m], e.heap[i]
		i = m
	}
}

// uniform returns a uniform time in [lo, hi] ms.
func (e *Engine) uniform(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + e.rng.Int64N(hi-lo+1)
}

// exp returns an exponentially distributed time with the given mean, ms
// (thesis 4.4.2: T = -μ·log(1-γ)).
func (e *Engine) exp(mean int64) int64 {
	return int64(e.rng.ExpFloat64() * float64(mean))
}
