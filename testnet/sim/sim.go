package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/loadbalance"
)

// rpcKind classifies the RPCs a node receives.
type rpcKind uint8

const (
	kLookup rpcKind = iota // routing: iterative lookup requests and near questions
	kJob                   // job store, republish sync, results, collected notices, fetches
	kIndex                 // index writes, withdrawals, queries, harvest pages
	kClaim                 // claim requests, confirms, releases
	kLB                    // load-balancing probes and hand-overs
	kPing                  // liveness pings of republish rounds (liveness.go)
	nKinds
)

var kindNames = [nKinds]string{"lookup", "job", "index", "claim", "lb", "ping"}

// node is one overlay node slot. A crash and rejoin, or a move, starts a
// new incarnation (gen) with a new synthetic peer ID; events addressed to
// an old incarnation are dropped.
type node struct {
	name     string // synthetic peer ID of this incarnation: id and gen, 8 bytes
	pos      keyspace.Pos
	alive    bool
	gen      uint32
	runs     uint32 // joins so far, restarts included: an index node's table is lost with each
	side     int8   // partition side
	jobs     map[int32]*replica
	claims   *claim.Server[int32] // the node side of claiming, as claimnet steps it; nil until asked
	active   int32                // replicas not finished or collected
	idx      *index.Table
	cache    map[uint64]int64 // lookup cache: key prefix → valid until (ms)
	rv       [2]regionView    // region views of the keyword and the finished keyword
	wq       []wop            // index work queued for the next writer tick
	flushAt  int64
	phase    int64 // the writer tick's phase, ms
	expiring bool
	handed   map[int32]int64 // jobs handed on to a newer closest: when (ms), for the listing's grace (pool.ListingHeld)
	resynced map[int32]int64 // jobs resynced on a client's repair request: when (ms), one per ResyncIntervalMS
	watchAt  int64           // the certificate watch's next round (certwatch.go), 0: none
	heard    map[int32]heard // peers heard from in this run, for the rounds' probes (liveness.go)

	born int64 // ms this incarnation started (join or move)
	// joinSeq is the engine's scheduling count at the last join: a timer
	// scheduled before it belongs to an earlier run of a restarted node
	// (ChurnRestart keeps gen, the identity).
	joinSeq uint64
	rounds  uint64 // republish rounds in this run: the first, and every RepublishFullEvery-th, is full
	crashAt int64
	served  uint64                         // RPCs received, the counter the controller samples its rate from
	ctl     *loadbalance.Controller[int32] // load balancing, from join to crash

	cnt   [nKinds]uint32 // RPCs received in the current second
	span  uint32         // RPCs received in the current load window (loadWindow)
	bytes uint32
	dirty bool
	tot   [nKinds]uint64 // RPCs received over the run
	upMS  int64
	upAt  int64
}

// replica is a node's copy of a job.
type replica struct {
	st     job.State // kept unexpired, as pool keeps it
	lapsed job.State // st as job.Lapse last read it in a republish round
	resp   int64     // last time among the job's r closest (ms)
	// synced is the view (hashed, syncSkip.go) its collected state was
	// synced to, at syncedAt (the state's At), in the node's run
	// syncedRun: marks live in memory, so a restart forgets them.
	synced    uint64
	syncedAt  int64
	syncedRun uint32
}

// wop is a job whose index entries a writer must look at in its next tick.
type wop struct {
	job int32
	due bool // T_rewrite passed
}

// jobRec is the simulator's record of a job: its identity, its workload
// attributes, where its index entry is (the closest node's writer
// record), and the ground truth used to count lost jobs and double claims.
type jobRec struct {
	key                       []byte
	pos                       keyspace.Pos
	created                   int64
	run                       int64 // compute time, ms
	tFinish                   int64 // ms
	live                      int16 // live replicas
	lost, collected, finished bool
	collectedAt               int64

	wKw      int8  // -1 unlisted, 0 the keyword, 1 the finished keyword
	wBy      int32 // writer node
	wByGen   uint32
	wTo      int32 // index node
	wToGen   uint32
	wToRun   uint32 // the index node's run (node.runs) the entry was written in
	wNext    int64  // next rewrite, ms
	wPt      keyspace.Pos
	wClaimed bool      // left ready since its writer last wrote it ready: the next write resets the quarantine (indexwriter's claimed set)
	view     []string  // replica set (peer IDs) the writer last saw, carried in the entry
	swept    sweepMark // the last withdrawal at the job's entry points by its closest (indexwriter's swept set)

	gtClient  int32
	gtUntil   int64
	gtEnded   bool
	claimed   bool        // some client won a claim on it
	swallowed bool        // the project gave its submission up and no node ever stored it
	sub       *submission // the project's submission while in progress (submit.go)
	faulty    int8        // Byzantine nodes among its r closest at creation
}

const (
	fateOK uint8 = iota
	fateTimeout
	fateError
)

// batch is the payload of a batched message.
type batch struct {
	from    int32
	fromGen uint32
	items   []syncItem
	jobs    []int32
	pts     []keyspace.Pos
	kws     []int8
	flags   []uint8    // per index write or withdrawal: wFinal, wReset
	attempt uint8      // a sync's attempt: 0 first, then re-planned after a failure (syncFailed)
	tried   *[]int32   // a pass-on's or placement's targets so far, shared by its batches
	call    *storeCall // a placement's: the project's store it answers (submit.go)
}

type syncItem struct {
	job    int32
	st     job.State
	forged bool // a forging node's finished or collected state: its proof fails the receiver's check
	handed bool // the sender is not among the job's r closest: it hands the state on (replica.Replan)
	drop   bool // handed on for the last time: the sender drops its copy once this sync took it (handedOn)
}

// Sim is one simulation run.
type Sim struct {
	c  Config
	e  *Engine
	lm lookupModel
	// wl draws the trace workload (batch sizes and gaps, job kinds and
	// run lengths; not how each execution ends, which is drawn per
	// attempt and so depends on the run) from a stream of its own, so
	// the same seed gives the same workload whatever else the simulator
	// draws: runs stay comparable across simulator changes.
	wl *rand.Rand

	nodes []node
	fault []Behaviour // by node slot (fault.go)
	clock []clockOf   // by node slot
	rings [3]ring     // all live nodes; the two sides of a partition
	part  bool
	jobs  []jobRec
	// accepts counts the confirms nodes accepted, per claim: a claim with
	// fewer than ClaimQuorum has no certificate (claim.CheckClaimProof),
	// so no node takes it, or its tombstone, from another (receive).
	accepts map[claimRef]int

	q, qFin       *index.Query
	kwFin         string
	listing       []string
	finListing    []string
	region        keyspace.Region
	regionFin     keyspace.Region
	projCache     map[uint64]int64
	projPos       keyspace.Pos // the project's position (its routing table's centre)
	pt            projectTable
	cv            crawlView           // the project's crawled view of the overlay
	dead          map[uint64]deadMark // the project's dead marks, by partyTag
	topo          uint64              // ring changes (joins, departures, moves, partitions)
	tFinish       int64
	running       []*attempt                               // static: won attempts waiting for the results phase
	onAttemptEnd  func(att *attempt, out claim.Outcome)    // set by Script: it takes over when an attempt ends
	onConfirmed   func(att *attempt, node string, ok bool) // set by Script: a node's answer to a confirm
	clientSeq     int32
	genCount      int
	genStart      int64
	idleClients   int
	trace         *traceGen
	closing       bool
	claimsStarted bool
	resultsAt     int64
	scratch       []int32
	scratch2      []int32
	scratchPeers  []index.Peer
	walk          []int32

	m        metrics
	rows     []Row
	acc      rowAcc
	progress func(Progress)
	ctx      context.Context
}

// Progress reports a long run's advance.
type Progress struct {
	Now       time.Duration // virtual time
	Submitted int
	Collected int
	Events    uint64
}

// New builds a run from c (defaults applied, validated).
func New(c Config) (*Sim, error) {
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Sim{c: c, e: NewEngine(c.Seed), lm: lookupModel{alpha: c.Alpha, k: c.K}, projCache: map[uint64]int64{}, accepts: map[claimRef]int{},
		dead: map[uint64]deadMark{}, wl: rand.New(rand.NewPCG(c.Seed, 0x776f726b6c6f6164))}
	s.kwFin = job.FinishedKeyword(c.Keyword)
	s.projPos = projectPos(c.Seed)
	var err error
	if s.q, err = index.Parse(c.Keyword); err != nil {
		return nil, fmt.Errorf("keyword %q: %w", c.Keyword, err)
	}
	if s.qFin, err = index.Parse(s.kwFin); err != nil {
		return nil, fmt.Errorf("keyword %q: %w", s.kwFin, err)
	}
	s.listing = []string{c.Keyword}
	s.finListing = []string{s.kwFin}
	s.region = keyspace.IndexRegion(c.Keyword, c.RegionBits)
	s.regionFin = keyspace.IndexRegion(s.kwFin, c.RegionBits)
	s.tFinish = ms(c.TFinish)
	s.nodes = make([]node, c.Nodes)
	s.assignFaults()
	for i := range s.nodes {
		s.join(int32(i))
	}
	return s, nil
}

// nodeName is the synthetic peer ID of node id's incarnation gen.
func nodeName(id int32, gen uint32) string {
	var b [8]byte
	binary.BigEndian.PutUint32(b[:4], uint32(id))
	binary.BigEndian.PutUint32(b[4:], gen)
	return string(b[:])
}

func parseName(s string) (int32, uint32) {
	return int32(binary.BigEndian.Uint32([]byte(s[:4]))), binary.BigEndian.Uint32([]byte(s[4:8]))
}

// jobKey is job i's key (its "CID"): the index and the seed, hashed to
// the job's position.
func (s *Sim) jobKey(i int32) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint32(b, uint32(i))
	binary.BigEndian.PutUint64(b[4:], s.c.Seed)
	return b
}

func jobID(key []byte) int32 { return int32(binary.BigEndian.Uint32(key)) }

func (s *Sim) view(side int8) *ring {
	if !s.part {
		return &s.rings[0]
	}
	return &s.rings[1+side]
}

// join starts a new incarnation of node id at the position its peer ID
// hashes to, and its timers.
func (s *Sim) join(id int32) {
	n := &s.nodes[id]
	now := s.e.now
	n.runs++
	restart := s.c.ChurnRestart && n.gen > 0
	if !restart { // a new node
		n.gen++
		n.name = nodeName(id, n.gen)
		n.pos = keyspace.PeerPos([]byte(n.name))
		n.jobs = map[int32]*replica{}
		n.claims = nil
		n.active = 0
	}
	n.joinSeq = s.e.seq
	n.rounds = 0
	n.alive = true
	n.watchAt = 0
	n.cache = map[uint64]int64{}
	n.heard = map[int32]heard{} // a restart drops every connection
	n.rv = [2]regionView{}
	n.idx, n.wq, n.flushAt, n.expiring, n.handed = nil, nil, 0, false, nil
	n.born, n.upAt = now, now
	n.ctl = s.newController(now) // a joining node takes over data (none at the start, time 0)
	n.phase = s.e.rng.Int64N(ms(s.c.WriterTick))
	if s.part && s.e.rng.Float64() < s.c.Partition.Fraction {
		n.side = 1
	} else {
		n.side = 0
	}
	s.ringsAdd(id)
	switch {
	case restart:
		// A restarted node asks the nearest peer it remembers for the
		// nodes nearest its position: one near question
		// (node.refreshNeighbours).
		for _, p := range s.view(n.side).closest(n.pos, 2, nil) {
			if p != id {
				s.near(lkJoin, p)
				break
			}
		}
	case now > 0:
		// A lookup of its own position fills its routing table (node.Join).
		s.lookup(lkJoin, nil, n.pos, n.side, n.pos)
	}
	if s.c.ChurnLife > 0 {
		n.crashAt = now + s.e.exp(ms(s.c.ChurnLife))
	}
	s.timers(id)
	// A node restarted with its jobs: its writer remembers no entry it
	// wrote, and its first tick is a full round (indexwriter.Round), which
	// lists the jobs it is now the closest to; the republish round that
	// would otherwise notice comes 20–30 periods later, often after the
	// node has crashed again.
	for _, j := range sortedKeys(n.jobs) {
		if r := &s.jobs[j]; r.wBy == id {
			r.wKw = -1
		}
		s.enqueue(id, wop{job: j})
	}
	// Before its writer's first tick it exchanges its jobs' states with
	// their replicas (pool.CatchUp, run once node.Join is done): the
	// replies arrive within a round trip, almost always before the tick's
	// flush (the real writer waits for the whole round: Pool.Behind).
	if len(n.jobs) > 0 && now > 0 {
		s.e.after(0, event{kind: evRepublish, node: id, gen: n.gen, arg: 1})
		s.adoptUncertified(id)
	}
}

// timers schedules a fresh incarnation's periodic rounds.
func (s *Sim) timers(id int32) {
	n := &s.nodes[id]
	ev := event{node: id, gen: n.gen}
	ev.kind = evRepublish
	s.e.after(s.e.uniform(ms(s.c.RepublishMin), ms(s.c.RepublishMax)), ev)
	if s.c.Balance {
		s.schedule(id, s.nodes[id].ctl.Step(s.e.now, loadbalance.Event[int32]{Kind: loadbalance.Start}))
	}
	if s.c.ChurnLife > 0 {
		ev.kind = evCrash
		s.e.at(n.crashAt, ev)
	}
}

// crash ends node id's incarnation: its index entries are gone, and its
// replicas too unless it will restart with them (ChurnRestart); it comes
// back after an exponential down time.
func (s *Sim) crash(id int32) {
	n := &s.nodes[id]
	listed := s.listedBy(id)
	if !s.c.ChurnRestart {
		for _, j := range sortedKeys(n.jobs) {
			s.dropReplica(id, j)
		}
		n.jobs = nil
	}
	s.ringsDel(id)
	if !s.c.NoRepair {
		s.repairSoon(id)
	}
	s.takeOverDead(id, listed)
	n.alive = false
	n.upMS += s.e.now - n.upAt
	n.idx, n.wq, n.cache = nil, nil, nil
	s.e.after(s.e.exp(ms(s.c.ChurnDown)), event{kind: evJoin, node: id, gen: n.gen})
}

// dropReplica deletes node id's replica of job j.
func (s *Sim) dropReplica(id, j int32) {
	n := &s.nodes[id]
	rep := n.jobs[j]
	if rep == nil {
		return
	}
	if rep.st.Phase < job.Finished {
		n.active--
	}
	delete(n.jobs, j)
	if n.claims != nil {
		n.claims.Changed(j, job.State{}, true, s.nowAt(id))
	}
	r := &s.jobs[j]
	r.live--
	if r.live <= 0 && !r.collected && !r.lost {
		r.lost = true
		s.m.lost++
	}
}

// live reports whether node id's incarnation gen is up and reachable from
// side (a message from side to it is delivered); drops count as failures.
func (s *Sim) reach(side int8, id int32, gen uint32) bool {
	if id < 0 || int(id) >= len(s.nodes) {
		return false
	}
	n := &s.nodes[id]
	if !n.alive || n.gen != gen || (s.part && n.side != side) {
		return false
	}
	return s.c.Drop == 0 || s.e.rng.Float64() >= s.c.Drop
}

// count records an RPC received by node id.
func (s *Sim) count(id int32, k rpcKind, bytes int) {
	n := &s.nodes[id]
	if !n.dirty {
		n.dirty = true
		s.m.dirty = append(s.m.dirty, id)
	}
	n.cnt[k]++
	n.bytes += uint32(bytes + s.c.SizeHeader)
	n.served++
}

// isClosest reports whether node id is the closest live node to job j in
// its own view.
func (s *Sim) isClosest(id, j int32) bool {
	return s.view(s.nodes[id].side).closestOne(s.jobs[j].pos) == id
}

// partition starts (on) or heals the partition.
func (s *Sim) partition(on bool) {
	if on == s.part {
		return
	}
	s.part = on
	s.topo++
	if !on {
		s.rings[1], s.rings[2] = ring{}, ring{}
		return
	}
	for i := range s.rings[0].id {
		id := s.rings[0].id[i]
		n := &s.nodes[id]
		n.side = 0
		if s.e.rng.Float64() < s.c.Partition.Fraction {
			n.side = 1
		}
		s.rings[1+n.side].insert(n.pos, id)
	}
	s.e.after(ms(s.c.Partition.Length), event{kind: evPartition, arg: 0})
}

// Run runs the simulation to its end (or ctx's), writing nothing; see
// Rows, Summary and the writers in output.go. progress, when set, is
// called about every simulated hour.
func (s *Sim) Run(ctx context.Context, progress func(Progress)) error {
	s.ctx, s.progress = ctx, progress
	s.start()
	var fired uint64
	for {
		ev, ok := s.e.next()
		if !ok || s.finished() {
			break
		}
		fired++
		if fired&0xffff == 0 && ctx.Err() != nil {
			return fmt.Errorf("simulation stopped at %v: %w", time.Duration(s.e.now)*time.Millisecond, ctx.Err())
		}
		s.dispatch(ev)
	}
	s.finish()
	return nil
}

// submitEvent is an evSubmit by its arg: the project's next submission
// (0), a job sent on (1), a trace's batch (2), a resubmission after its
// first node failed (3).
func (s *Sim) submitEvent(ev event) {
	switch ev.arg {
	case 1:
		s.sendJob(ev.job)
	case 2:
		s.trace.batch()
	case 3:
		s.markDead(ev.node, ev.gen)
		s.resubmit(ev.job)
	default:
		s.submit()
	}
}

func (s *Sim) dispatch(ev event) {
	switch ev.kind {
	case evTick:
		s.tick()
	case evSubmit:
		s.submitEvent(ev)
	case evStore:
		s.store(ev)
	case evStored:
		s.stored(ev)
	case evRepublish:
		if s.alive(ev) {
			s.republish(ev.node, ev.arg == 0) // arg 1: a restart's catch-up round
		}
	case evSync:
		s.sync(ev)
	case evSyncReply:
		s.syncReply(ev)
	case evSyncFailed:
		s.syncFailed(ev)
	case evHandOn:
		s.handOn(ev)
	case evRepair:
		s.repair(ev)
	case evRewrite:
		s.rewriteDue(ev)
	case evFlush:
		if s.alive(ev) {
			s.flush(ev.node)
		}
	case evIndexWrite:
		s.indexWrite(ev)
	case evIndexWithdraw:
		s.indexWithdraw(ev)
	case evIndexExpire:
		s.indexExpire(ev)
	case evClaimStart:
		s.claimStart(ev)
	case evQuery:
		s.queryArrive(ev)
	case evAsk:
		s.ask(ev)
	case evConfirm:
		s.confirm(ev)
	case evRelease:
		s.release(ev)
	case evCertify:
		s.certify(ev)
	case evCertWatch:
		s.certWatch(ev)
	case evClientDone:
		s.clientDone(ev.att)
	case evResult:
		s.result(ev)
	case evHarvest:
		s.harvest()
	case evCollected:
		s.collectedAt(ev)
	case evBalance:
		if s.alive(ev) {
			s.balance(ev.node)
		}
	case evReact:
		s.react(ev)
	case evCrash:
		if s.alive(ev) {
			s.crash(ev.node)
		}
	case evJoin:
		if !s.nodes[ev.node].alive {
			s.join(ev.node)
		}
	case evPartition:
		s.partition(ev.arg == 1)
	}
}

// alive reports whether the event's node incarnation is still up.
func (s *Sim) alive(ev event) bool {
	n := &s.nodes[ev.node]
	return n.alive && n.gen == ev.gen && ev.seq >= n.joinSeq
}
