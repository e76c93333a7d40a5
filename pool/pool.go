package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// Store key namespaces.
const (
	jobNS  = "job"
	certNS = "cert"
	// stateNS holds a held job's latest state and responsibility time
	// ("jstate/<key>", a stateRecord), written on each change so that a
	// change costs one small write, not a read and rewrite of the job's
	// record (signed spec and listing: written once, at acceptance). A job
	// without one (never changed since acceptance, or stored before the
	// split) has its state in its record.
	stateNS = "jstate"
)

// stateRecord is a held job's state as persisted under stateNS, with the
// proof that makes it true: one key per change, and one to delete.
type stateRecord struct {
	_           struct{} `cbor:",toarray"`
	State       job.State
	Responsible int64
	// Proof is the state's proof (job.Proof, encoded); nil: none. Encoded
	// only when set: a record without one keeps its two elements, as
	// written before proofs moved here from proofNS.
	Proof []byte
}

// stateRecordV1 is a state record without a proof: two elements.
type stateRecordV1 struct {
	_           struct{} `cbor:",toarray"`
	State       job.State
	Responsible int64
}

// stateRecordV1Fields is its element count (codec.ArrayLen).
var stateRecordV1Fields = codec.Fields(stateRecordV1{})

// encodeStateRecord encodes r: two elements when it has no proof.
func encodeStateRecord(r *stateRecord) ([]byte, error) {
	if len(r.Proof) == 0 {
		return codec.Marshal(&stateRecordV1{State: r.State, Responsible: r.Responsible})
	}
	return codec.Marshal(r)
}

// decodeStateRecord parses a state record in either layout.
func decodeStateRecord(b []byte) (stateRecord, error) {
	if codec.ArrayLen(b) == stateRecordV1Fields {
		var v1 stateRecordV1
		err := codec.Unmarshal(b, &v1)
		return stateRecord{State: v1.State, Responsible: v1.Responsible}, err
	}
	var r stateRecord
	err := codec.Unmarshal(b, &r)
	return r, err
}

// record is a job as persisted: the signed spec, its replica state and when
// the node last found itself among the job's r closest.
type record struct {
	_           struct{} `cbor:",toarray"`
	Signed      []byte
	State       job.State
	Responsible int64
	Listing     []byte
}

// entry is a held job in memory; the signed spec stays on disk.
type entry struct {
	pos         keyspace.Pos // the position of the job's place key (job.PlaceKey): its replicas are the r closest
	root        []byte       // the root of the batch the spec was signed in (its place), nil: placed by its key
	state       job.State
	responsible int64
	certRef     string
	project     string
	created     int64
	tFinish     int64
	expires     int64 // the spec's expiry, on its project's clock (job.Spec.Expires)
	keywords    []string
	unit        string      // job.Spec.UnitKey: the unit the job is a copy of
	proof       []byte      // the evidence of state (job.Proof, encoded), nil when none
	proofApart  bool        // proof is stored under proofNS (written so before), not in the state record
	steps       uint16      // the spec's Steps: 0, not a sequence (sequence.go)
	ckptStep    uint16      // the newest checkpoint's step held, 0: none
	orderRev    uint64      // the newest project order applied to steps (order.go), 0: none
	renewal     job.Renewal // the newest checkpoint's claim and when stored here
	trickles    int         // trickles held for the project
	// lapsed says the claim state holds has lapsed on this node's clock,
	// as last told to the OnChange hooks (ExpireNow reports changes).
	lapsed bool
	// counted says closest is this node's closeness to the job as
	// Counts last counted it (counts.go).
	counted, closest bool
	// syncedView and syncedAt: the hash of the view a republish round
	// last synced this job's collected state (collected at syncedAt) to,
	// in full; 0: never (republish_skip.go).
	syncedView uint64
	syncedAt   int64
}

// Pool is a node's share of the job pool. Safe for concurrent use.
type Pool struct {
	cfg     Config
	env     overlay.Env
	account *Account // signs receipts; nil: none
	ep      *overlay.Endpoint
	dht     *dht.DHT
	st      *store.Store
	goneSt  *store.Store // gone records' payloads (gone.go); nil: st
	log     *slog.Logger
	r       int

	// behind is set while the jobs loaded from the store at start have
	// not yet been through a republish round (CatchUp): their states may
	// be older than their fellow replicas'.
	behind atomic.Bool

	mu       sync.Mutex
	jobs     map[string]*entry              // by job key (CID bytes)
	units    map[string]map[string]struct{} // job keys held, by unit key (hold, unhold)
	close    closestCount                   // the jobs this node is the closest to, kept as jobs come and go (counts.go)
	certs    map[string][]byte              // project certificate DER by CertRef
	rng      *rand.Rand
	goneN    int         // gone records on disk (gone.go)
	goneKeys *goneFilter // the keys of the gone records, for a store-free "not gone" (gonefilter.go)

	proven map[[32]byte]struct{} // proofs checked here (proof.go)
	// sigs are the project signatures verified here: a batch's root
	// signature (collect statements, specs) comes with each of its jobs.
	sigs     *sigverify.Once
	evidence evidenceLog // refused forgeries (evidence.go)

	hooks []func(key []byte, st job.State, deleted bool)

	mJobs     prometheus.GaugeFunc
	mStored   *prometheus.CounterVec
	mRefused  prometheus.Counter
	mSynced   prometheus.Counter
	mRepaired prometheus.Counter
	mDropped  prometheus.Counter
	mForged   *prometheus.CounterVec
	mResynced prometheus.Counter

	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	inflight   inflight     // hand-ons in progress
	passedOn   atomic.Int64 // syncs sent to hand results on (passOnResult)
	boardMu    sync.Mutex   // serialises a unit board's read-modify-write (commits.go)
	boardSwept int64        // when expireBoards last swept, ms on this node's clock; boardMu
	handOns    handOns      // hand-on on join (handoff.go)
	repairs    repairs      // repair on departure (repair.go)
	views      viewEpochs   // peers' admissions, for the views rounds hash (republish_skip.go)
	rounds     uint64       // republish rounds started; mu
	resynced   resyncs      // last Resync per job (resync.go)
}

// New opens the node's job pool on its store, loads the jobs held, and
// serves the job protocols: cfg's defaults applied, then validated.
func New(deps Deps, cfg Config) (*Pool, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	ep, d := deps.Endpoint, deps.DHT
	p := &Pool{
		cfg: cfg, env: deps.Env, account: deps.Account, ep: ep, dht: d, st: deps.Store, goneSt: deps.GoneStore, log: deps.Env.Logger, r: d.Replication(),
		jobs:     make(map[string]*entry),
		units:    make(map[string]map[string]struct{}),
		certs:    make(map[string][]byte),
		proven:   make(map[[32]byte]struct{}),
		sigs:     sigverify.NewOnce(maxProofCache),
		goneKeys: newGoneFilter(0),
		rng:      rand.New(rand.NewPCG(deps.Env.Seed, keyspace.Seed([]byte(ep.ID()), 5))),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if err := p.load(); err != nil {
		return nil, err
	}
	p.behind.Store(p.Len() > 0)
	p.registerMetrics(ep.Metrics().Registry)
	ep.Handle(wire.ProtoJobStore, wire.MaxJobFrame, []certs.Role{certs.RoleNode, certs.RoleProject}, p.handleStore)
	ep.Handle(wire.ProtoJobGet, 64<<10, nil, p.handleGet)
	ep.Handle(wire.ProtoJobSync, wire.MaxJobFrame, []certs.Role{certs.RoleNode}, p.handleSync)
	p.registerResultProtocols()
	p.registerCommitProtocols()
	p.registerSequenceProtocols()
	p.watchDepartures()
	if !cfg.DisableLoops {
		p.goLoop(p.republishLoop)
		p.goLoop(p.expiryLoop)
		p.startHandOn()
		p.goLoop(p.repairLoop)
	}
	return p, nil
}

func (p *Pool) registerMetrics(reg *prometheus.Registry) {
	p.mJobs = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_jobs_held", Help: "Job replicas held by this node.",
	}, func() float64 { return float64(p.Len()) })
	p.mStored = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_jobs_stored_total", Help: "Jobs newly stored, by source (project, node).",
	}, []string{"source"})
	p.mRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_jobs_refused_total", Help: "Jobs refused: malformed, forged, revoked or foreign.",
	})
	p.mSynced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_job_sync_items_total", Help: "Job states sent in republish syncs.",
	})
	p.mRepaired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_job_replicas_repaired_total", Help: "Jobs sent to a replica that lacked them.",
	})
	p.mDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_jobs_dropped_total", Help: "Jobs deleted: collected and kept T_collect, or no longer among the r closest.",
	})
	p.mResynced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_job_resyncs_total", Help: "Syncs of one job with a fellow replica outside the republish round (Resync: a claim denied here may be stale).",
	})
	p.mForged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_forged_states_refused_total", Help: "Replicated states refused for a missing or forged proof, by the sender's certificate name.",
	}, []string{"sender"})
	reg.MustRegister(p.mJobs, p.mStored, p.mRefused, p.mSynced, p.mRepaired, p.mDropped, p.mForged, p.mResynced)
}

func (p *Pool) goLoop(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// Close stops the background rounds. The store is the node's to close.
func (p *Pool) Close() error {
	p.cancel()
	p.wg.Wait()
	p.inflight.Wait()
	return nil
}

func (p *Pool) nowMS() int64 { return p.env.Now().UnixMilli() }

// view is a held job's state as this node judges it at now on its own
// clock: the stored state is kept unexpired (and sent so), job.Lapse ends
// its claim here. p.mu is held.
func (p *Pool) view(e *entry, now int64) job.State {
	return job.LapseRenewed(e.state, now, e.tFinish, p.cfg.TSkew.Milliseconds(), e.renewal)
}

// loadStates reads every job's state written apart from its record
// (stateNS), by job key. A state that does not decode is logged and left
// out: its record's state stands.
func (p *Pool) loadStates() (map[string]stateRecord, error) {
	states := map[string]stateRecord{}
	err := p.st.Scan(store.Key(stateNS), func(k, v []byte) bool {
		sr, err := decodeStateRecord(v)
		if err != nil {
			p.log.Error("job store", "err", fmt.Errorf("stored state %x: %w", k, err))
			return true
		}
		states[string(k[len(stateNS)+1:])] = sr
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read job states: %w", err)
	}
	return states, nil
}

// load reads every held job and certificate from the store.
func (p *Pool) load() error {
	var errs []error
	err := p.st.Scan(store.Key(certNS), func(k, v []byte) bool {
		p.certs[string(k[len(certNS)+1:])] = append([]byte(nil), v...)
		return true
	})
	if err != nil {
		return err
	}
	states, err := p.loadStates()
	if err != nil {
		return err
	}
	err = p.st.Scan(store.Key(jobNS), func(k, v []byte) bool {
		var rec record
		if err := codec.Unmarshal(v, &rec); err != nil {
			errs = append(errs, fmt.Errorf("stored job %x: %w", k, err))
			return true
		}
		signed, spec, err := job.Decode(rec.Signed)
		if err != nil {
			errs = append(errs, fmt.Errorf("stored job %x: %w", k, err))
			return true
		}
		key := string(signed.Key())
		sr, changed := states[key]
		if changed {
			rec.State, rec.Responsible = sr.State, sr.Responsible
		}
		// A restarted node gets a fresh replica-expiry grace for its jobs:
		// the next rounds tell whether it is still among their r closest.
		e := newEntry(key, signed, spec, rec.State, max(rec.Responsible, p.nowMS()))
		if changed && len(sr.Proof) > 0 {
			e.proof = sr.Proof
		}
		p.loadSequence(key, e, p.nowMS())
		p.hold(key, e)
		return true
	})
	if err != nil {
		return err
	}
	// Proofs written apart from their states, as before proofs went into
	// the state record: kept so until the job's state changes again.
	err = p.st.Scan(store.Key(proofNS), func(k, v []byte) bool {
		if e, ok := p.jobs[string(k[len(proofNS)+1:])]; ok {
			e.proof, e.proofApart = append([]byte(nil), v...), true
		}
		return true
	})
	if err != nil {
		return err
	}
	if n, err := p.migrateGone(); err != nil {
		return err
	} else if n > 0 {
		p.log.Info("gone records moved to the gone store", "records", n)
	}
	if p.goneN, err = p.rebuildGone(); err != nil {
		return err
	}
	if err := p.loadEvidence(); err != nil {
		return err
	}
	for _, e := range errs {
		p.log.Error("job store", "err", e)
	}
	return nil
}

// newEntry is the entry of job key, signed as signed. A batch path that
// leads nowhere (its signature check would fail first) places the job by
// its key.
func newEntry(key string, signed *job.Signed, spec *job.Spec, st job.State, responsible int64) *entry {
	root, _ := signed.BatchRoot()
	return &entry{
		pos: keyspace.KeyPos(job.PlaceKey([]byte(key), root)), root: root, state: st, responsible: responsible,
		certRef: string(spec.CertRef), project: spec.Project, created: spec.Created, tFinish: spec.TFinish, keywords: spec.Keywords,
		expires: spec.Expires(), unit: string(spec.UnitKey()), steps: spec.Steps,
	}
}

// State returns the replica state of a held job as this node judges it
// on its own clock (job.Lapse).
func (p *Pool) State(key []byte) (job.State, bool) {
	now := p.nowMS()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return job.State{}, false
	}
	return p.view(e, now), true
}

// stored returns a held job's state unexpired, as it is sent to others:
// each receiver judges a claim's lapse on its own clock.
func (p *Pool) stored(key []byte) (job.State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return job.State{}, false
	}
	return e.state, true
}

// storedItem returns a held job's state unexpired with its proof, as a
// sync sends it.
func (p *Pool) storedItem(key []byte) (wire.SyncItem, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return wire.SyncItem{}, false
	}
	st, proof := p.sendable(e.state, e.proof)
	return wire.SyncItem{Key: key, State: st, Proof: proof}, true
}

// viewItem returns, read together under one lock, a held job's state as
// this node judges it (view) and its stored state with its proof as a
// sync sends it: read apart, the state could change in between and a
// state go out with another state's proof (or none), which its receiver
// refuses as a forgery of this node.
func (p *Pool) viewItem(key []byte) (view job.State, it wire.SyncItem, ok bool) {
	now := p.nowMS()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return job.State{}, wire.SyncItem{}, false
	}
	st, proof := p.sendable(e.state, e.proof)
	return p.view(e, now), wire.SyncItem{Key: key, State: st, Proof: proof}, true
}

// Get returns a held job's encoded signed spec and state (as State).
func (p *Pool) Get(key []byte) ([]byte, job.State, error) {
	env, err := p.Envelope(key)
	if err != nil {
		return nil, job.State{}, err
	}
	st, _ := p.State(key)
	return env.Signed, st, nil
}

// Envelope returns a held job as it travels: signed spec, listing and
// state, unexpired (each receiver judges a claim's lapse on its own clock).
func (p *Pool) Envelope(key []byte) (wire.JobEnvelope, error) {
	it, ok := p.storedItem(key)
	if !ok {
		return wire.JobEnvelope{}, store.ErrNotFound
	}
	v, err := p.st.Get(store.Key(jobNS, key))
	if err != nil {
		return wire.JobEnvelope{}, err
	}
	var rec record
	if err := codec.Unmarshal(v, &rec); err != nil {
		return wire.JobEnvelope{}, fmt.Errorf("stored job: %w", err)
	}
	return wire.JobEnvelope{Signed: rec.Signed, State: it.State, Listing: rec.Listing, Proof: it.Proof}, nil
}

// OnChange registers f to be called, outside the pool's lock, whenever a
// held job is added (with its state), changes state, or is deleted.
func (p *Pool) OnChange(f func(key []byte, st job.State, deleted bool)) {
	p.mu.Lock()
	p.hooks = append(p.hooks, f)
	p.mu.Unlock()
}

type change struct {
	key     []byte
	st      job.State
	deleted bool
}

func (p *Pool) notify(changes ...change) {
	p.mu.Lock()
	hooks := p.hooks
	p.mu.Unlock()
	for _, c := range changes {
		for _, f := range hooks {
			f(c.key, c.st, c.deleted)
		}
	}
}

// Held is what Each reports of one held job.
type Held struct {
	Key      []byte
	State    job.State // as this node judges it (Pool.State)
	Pos      keyspace.Pos
	Project  string
	Created  int64
	TFinish  int64 // the spec's T_finish, ms
	Keywords []string
	// CertRef is the spec's CertRef, as a string: the hash of its
	// project's certificate (Cert finds it).
	CertRef string
	// Trickles says the node holds trickles of the job (a sequence's
	// progress) the project has not collected.
	Trickles bool
}

// Lookup returns what Each would report of one job, if held.
func (p *Pool) Lookup(key []byte) (Held, bool) {
	now := p.nowMS()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return Held{}, false
	}
	return Held{Key: key, State: p.view(e, now), Pos: e.pos, Project: e.project, Created: e.created, TFinish: e.tFinish, Keywords: e.keywords,
		CertRef:  e.certRef,
		Trickles: e.trickles > 0}, true
}

// Each calls f for every held job (in no order) until f returns false.
func (p *Pool) Each(f func(Held) bool) {
	now := p.nowMS()
	p.mu.Lock()
	all := make([]Held, 0, len(p.jobs))
	for k, e := range p.jobs {
		all = append(all, Held{Key: []byte(k), State: p.view(e, now), Pos: e.pos,
			Project: e.project, Created: e.created, TFinish: e.tFinish, Keywords: e.keywords, CertRef: e.certRef, Trickles: e.trickles > 0})
	}
	p.mu.Unlock()
	for _, h := range all {
		if !f(h) {
			return
		}
	}
}

// Cert returns a project certificate by its reference.
func (p *Pool) Cert(ref []byte) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	der, ok := p.certs[string(ref)]
	return der, ok
}

// certFor returns the CertRef of held job key's spec and its project's
// certificate (DER): from the CertRef kept when the job was accepted,
// without decoding the stored spec; should the job have left the pool
// since its envelope (signed) was read, from that spec decoded, as the
// envelope goes out all the same. False when the certificate is not held.
func (p *Pool) certFor(key, signed []byte) (ref string, der []byte, ok bool) {
	p.mu.Lock()
	if e, held := p.jobs[string(key)]; held {
		ref = e.certRef
		der, ok = p.certs[ref]
		p.mu.Unlock()
		return ref, der, ok
	}
	p.mu.Unlock()
	_, spec, err := job.Decode(signed)
	if err != nil {
		return "", nil, false
	}
	der, ok = p.Cert(spec.CertRef)
	return string(spec.CertRef), der, ok
}

// ErrUnknownJob reports a state change for a job the node does not hold.
var ErrUnknownJob = errors.New("job not held")

// Apply merges a state this node established itself (a claim it granted,
// a release its client signed) into a held job's replica state, persists
// the result and returns it as this node judges it (State). It checks no
// proof: states from other nodes go through applyFrom. States are kept
// and merged unexpired (job.Receive: the join, except that a tombstone of
// the claim held here stays out while the claim is live on this node's
// clock); job.Lapse, which commutes with the join, ends claims only in
// what the node reads. So no other node's clock, however far it jumped,
// ends a claim here, and a jump of this node's own clock ends none for
// good.
func (p *Pool) Apply(key []byte, st job.State) (job.State, error) {
	_, v, err := p.apply(key, st, nil)
	return v, err
}

// lockEntry checks that st is well formed and returns the held job's
// entry and this node's time, with p.mu held (the caller unlocks); on an
// error the lock is not held.
func (p *Pool) lockEntry(key []byte, st job.State) (*entry, int64, error) {
	if err := st.Validate(); err != nil {
		return nil, 0, err
	}
	now := p.nowMS()
	p.mu.Lock()
	e, ok := p.jobs[string(key)]
	if !ok {
		p.mu.Unlock()
		return nil, 0, ErrUnknownJob
	}
	return e, now, nil
}

// Forget deletes a held job (tests use it to lose a replica).
func (p *Pool) Forget(key []byte) error {
	p.mu.Lock()
	_, held := p.jobs[string(key)]
	p.unhold(string(key))
	err := p.st.Delete(store.Key(jobNS, key))
	_ = p.st.Delete(store.Key(stateNS, key))
	_ = p.st.Delete(store.Key(resultNS, key))
	_ = p.st.Delete(store.Key(proofNS, key))
	_ = p.st.Delete(store.Key(ckptNS, key))
	_ = p.st.Delete(store.Key(trickleNS, key))
	_ = p.st.Delete(store.Key(orderNS, key))
	p.mu.Unlock()
	if held {
		p.notify(change{key: key, deleted: true})
	}
	return err
}

// self is this node's peer ID.
func (p *Pool) self() peer.ID { return p.ep.ID() }

// posOf is the position of a held job's place (its replicas are the r
// closest to it); a job not held is taken to be placed by its key.
func (p *Pool) posOf(key []byte) keyspace.Pos {
	p.mu.Lock()
	e, ok := p.jobs[string(key)]
	p.mu.Unlock()
	if ok {
		return e.pos
	}
	return keyspace.KeyPos(key)
}

// PlaceKey returns the place key of a held job (job.PlaceKey: the key
// whose r closest nodes are its replicas), false when it is not held.
func (p *Pool) PlaceKey(key []byte) ([]byte, bool) {
	p.mu.Lock()
	e, ok := p.jobs[string(key)]
	p.mu.Unlock()
	if !ok {
		return nil, false
	}
	return job.PlaceKey(key, e.root), true
}
