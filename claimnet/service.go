// Package claimnet is the node side of the claim protocol's I/O: grant,
// confirm, release and certify handlers that decode, step the claim
// machine (claim.Server: temporary claims, the confirm check, the claim
// log) and sign or merge what it returns, permanent claims through the
// job pool, the proof checker that merges claims from other nodes,
// and the per-client rate limit on claims. A confirm's replies are checked
// together, in one batch verification. The client side (the Claimer) is
// package claimclient, which links no pool.
package claimnet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/wire"
)

// Config configures a node's claim service (and its proof checker). Zero
// values take the defaults.
type Config struct {
	// TClaim is how long a temporary claim lasts without a confirm.
	// Default 15 s; at least 1 ms.
	TClaim time.Duration
	// TSkew is how far clocks may disagree (thesis 3.2.4's T_skew): a
	// confirm's claim start, read from the client's clock, must lie within
	// TSkew of this node's clock. No other rule compares clocks: other
	// nodes' reply times are never checked against this one. A client or
	// node more than TSkew off cannot claim (its confirms are refused), and
	// a claim's deadline, an absolute time, is judged early or late by as
	// much as the clock is off. Default claim.DefaultTSkew, 20 min.
	TSkew time.Duration
	// Limit is the sustained claim requests per second one client may
	// make at this node, Burst the burst. Defaults 20 per second and 40.
	Limit float64
	Burst int
	// Warmup is how long after the service starts a node whose routing
	// table knows fewer than r nodes accepts confirm replies from nodes
	// it cannot place (see claim.CanJudge). Default 1 min.
	Warmup time.Duration
	// TCert is how long a claim this node accepted may go without its
	// certificate (the client's /up/claim/certify, or a sync carrying it)
	// before the node resyncs the job and then voids the claim (void.go:
	// the certificate watch, which runs every TCert/4, and a claim
	// request from another client). Default 1 min.
	TCert time.Duration
	// RequireTicket refuses a claim request without a ticket from one of
	// the client's record nodes (checkTicket): the client's quota of jobs
	// in progress, kept where its credit is (package quota). Off by
	// default in the library, on in 'up node run'.
	RequireTicket bool
}

// Deps is what the claim service and the proof checker need of the node
// that runs them.
type Deps struct {
	// Endpoint is the node's overlay endpoint. Required.
	Endpoint *overlay.Endpoint
	// DHT places a confirm's replies among a job's closest. Required.
	DHT *dht.DHT
	// Pool holds the jobs claimed. Required by New; NewProofChecker,
	// whose checker the pool takes, needs none.
	Pool *pool.Pool
	// Identity signs the service's replies: New keeps a snapshot, as a
	// move rotates it for the next instance. Required by New.
	Identity *keystore.Identity
	// Env is the node's clock and logger.
	Env overlay.Env
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	if c.TClaim == 0 {
		c.TClaim = 15 * time.Second
	}
	if c.TSkew == 0 {
		c.TSkew = time.Duration(claim.DefaultTSkew) * time.Millisecond
	}
	if c.Limit == 0 {
		c.Limit = 20
	}
	if c.Burst == 0 {
		c.Burst = 40
	}
	if c.Warmup == 0 {
		c.Warmup = time.Minute
	}
	if c.TCert == 0 {
		c.TCert = time.Minute
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	switch {
	case c.TClaim < time.Millisecond:
		return fmt.Errorf("claim config: TClaim %s is below 1ms", c.TClaim)
	case c.TSkew < 0:
		return fmt.Errorf("claim config: TSkew %s is negative", c.TSkew)
	case !(c.Limit > 0):
		return fmt.Errorf("claim config: Limit %v is not a positive rate", c.Limit)
	case c.Burst < 1:
		return fmt.Errorf("claim config: Burst %d is below 1", c.Burst)
	case c.Warmup < 0:
		return fmt.Errorf("claim config: Warmup %s is negative", c.Warmup)
	case c.TCert < 0:
		return fmt.Errorf("claim config: TCert %s is negative", c.TCert)
	}
	return nil
}

// validate reports a missing dependency; service says whether New (which
// needs the pool and the identity) asks.
func (d *Deps) validate(service bool) error {
	switch {
	case d.Endpoint == nil:
		return errors.New("claimnet: Deps.Endpoint is nil")
	case d.DHT == nil:
		return errors.New("claimnet: Deps.DHT is nil")
	case service && d.Pool == nil:
		return errors.New("claimnet: Deps.Pool is nil")
	case service && d.Identity == nil:
		return errors.New("claimnet: Deps.Identity is nil")
	}
	return nil
}

// Record is one permanent claim this node made, for audit (claim.Record
// with the job it is for).
type Record struct {
	Job []byte
	claim.Record
}

// Service answers claims for the jobs a node holds.
type Service struct {
	cfg     Config
	now     func() time.Time
	log     *slog.Logger
	ep      *overlay.Endpoint
	d       *dht.DHT
	pool    *pool.Pool
	id      *keystore.Identity
	limiter *overlay.RateLimiter
	started int64 // Unix ms, for claim.CanJudge

	mu sync.Mutex
	// srv is the claim machine: temporary claims and the log of permanent
	// ones. Stepped under mu.
	srv   *claim.Server[string]
	own   *ownReplies // digests of the replies this node signed lately
	freed []func(key []byte)
	// positions are the position records verified lately; forgers counts
	// forged replies by the certificate that signed them.
	positions *positions
	forgers   map[string]int

	mReplies *prometheus.CounterVec
	mConfirm *prometheus.CounterVec
	mForged  *prometheus.CounterVec
	mVoided  prometheus.Counter
	// beforeConfirmApply, set by tests only, runs between a confirm's
	// check and its merge (the window a concurrent release can fall in).
	beforeConfirmApply func(key []byte)
	voided             atomic.Int64 // mVoided's count, for Counts
	why                whyTally     // denials and refusals by reason, for Counts
	watch              certWatch    // the certificate watch's loop (void.go)
}

// New serves the claim protocols on a node: cfg's defaults applied, then
// validated.
func New(deps Deps, cfg Config) (*Service, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(true); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	ep, p := deps.Endpoint, deps.Pool
	// The service signs as the identity its host runs under: a snapshot,
	// since a move rotates id's peer key and position for the next host
	// while this one may still be answering.
	snapshot := *deps.Identity
	s := &Service{cfg: cfg, now: deps.Env.Now, log: deps.Env.Logger, ep: ep, d: deps.DHT, pool: p, id: &snapshot,
		srv:     claim.NewServer[string](cfg.TClaim.Milliseconds(), cfg.TSkew.Milliseconds()),
		started: deps.Env.Now().UnixMilli(),
		own:     newOwnReplies(1<<14, 2*cfg.TClaim.Milliseconds()),
		limiter: overlay.NewRateLimiter(cfg.Limit, cfg.Burst, deps.Env.Now)}
	s.mReplies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_claim_replies_total", Help: "Claim requests answered, by reply (granted, denied, don't care).",
	}, []string{"reply"})
	s.mConfirm = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_claim_confirms_total", Help: "Confirms, by result (claimed, refused).",
	}, []string{"result"})
	s.mForged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_claim_forged_replies_total", Help: "Confirm replies refused as forged (not bound to the node they name), by the certificate that signed them.",
	}, []string{"signer"})
	s.positions, s.forgers = newPositions(4096), map[string]int{}
	s.mVoided = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_claims_voided_total", Help: "Claims accepted here that got no certificate within T_cert and were voided.",
	})
	ep.Metrics().Registry.MustRegister(s.mReplies, s.mConfirm, s.mForged, s.mVoided)
	p.OnChange(s.onChange)
	clients := []certs.Role{certs.RoleClient}
	ep.Handle(wire.ProtoClaim, 1024, clients, s.handleClaim)
	ep.Handle(wire.ProtoConfirm, 1<<20, clients, s.handleConfirm)
	ep.Handle(wire.ProtoClaimMany, 256<<10, clients, s.handleClaimMany) // 32 keys and tickets of ~1.2 kB
	ep.Handle(wire.ProtoConfirmMany, wire.MaxClaimManyBytes, clients, s.handleConfirmMany)
	ep.Handle(wire.ProtoClaimManyShared, 256<<10, clients, s.handleClaimManyShared)
	ep.Handle(wire.ProtoConfirmManyShared, wire.MaxClaimManyBytes, clients, s.handleConfirmManyShared)
	ep.Handle(wire.ProtoRelease, 1024, clients, s.handleRelease)
	ep.Handle(wire.ProtoCertify, 1<<20, clients, s.handleCertify)
	ep.Handle(wire.ProtoJobExplain, wire.MaxJobKeyLen+64, explainers, s.handleExplain)
	s.adoptUncertified()
	s.startCertWatch()
	return s, nil
}

// Counts are what a node's claim service answered since it started.
type Counts struct {
	Granted, Denied, DontCare int // claim requests, by reply
	Claimed, Refused          int // confirms, by result
	Voided                    int // claims voided without a certificate (void.go)
	// Why counts denials ("deny: <reason>") and refused confirms
	// ("refuse: <reason>") by a short fixed reason.
	Why map[string]int
}

// Counts reports the replies and confirm results of this service (its
// up_claim_replies_total and up_claim_confirms_total metrics).
func (s *Service) Counts() Counts {
	n := func(v *prometheus.CounterVec, label, value string) int {
		return int(overlay.SumCounter(v, label, value))
	}
	return Counts{
		Granted:  n(s.mReplies, "reply", claim.Granted.String()),
		Denied:   n(s.mReplies, "reply", claim.Denied.String()),
		DontCare: n(s.mReplies, "reply", claim.DontCare.String()),
		Claimed:  n(s.mConfirm, "result", "claimed"),
		Refused:  n(s.mConfirm, "result", "refused"),
		Voided:   int(s.voided.Load()),
		Why:      s.why.snapshot(),
	}
}

// Log returns the permanent claims this node made on the jobs it still
// holds, in the order it made them.
func (s *Service) Log() []Record {
	s.mu.Lock()
	logged := s.srv.Log()
	s.mu.Unlock()
	out := make([]Record, len(logged))
	for i, l := range logged {
		out[i] = Record{Job: []byte(l.Job), Record: l.Record}
	}
	return out
}

func (s *Service) handleClaim(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ClaimRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	client := []byte(from.Identity.PublicKey)
	if !s.limiter.Allow(string(client)) {
		return nil, overlay.StatusErr(wire.StatusRateLimited, fmt.Errorf("claims from client %q over %.0f/s", from.Identity.Name, s.cfg.Limit))
	}
	if err := s.requireTicket(req.Job, req.Ticket, client, from.Identity.Name); err != nil {
		return nil, err
	}
	now := s.now().UnixMilli()
	signed, err := claim.Sign(s.grant(req.Job, client, now), s.id.Cert.Raw, s.id.Position.Marshal(), s.id.PeerSign)
	if err != nil {
		return nil, err
	}
	s.own.add(signed, now)
	return &wire.ClaimResponse{Reply: signed}, nil
}

// requireTicket checks the ticket of a claim of job by client (named
// name) when this node requires tickets: the error is the request's
// answer (StatusQuota, saying why).
func (s *Service) requireTicket(key, ticket, client []byte, name string) error {
	if !s.cfg.RequireTicket {
		return nil
	}
	var place *keyspace.Pos // the held job's: the ticket must name it
	if h, held := s.pool.Lookup(key); held {
		place = &h.Pos
	}
	if err := s.checkTicket(ticket, key, client, place, s.now()); err != nil {
		s.why.add("deny: no ticket")
		return overlay.StatusErr(wire.StatusQuota, fmt.Errorf("claim of job %x by %q: %w", key, name, err))
	}
	return nil
}

// grant decides a claim request for job key by client at now (Unix ms):
// the statement this node signs in answer.
func (s *Service) grant(key, client []byte, now int64) claim.Statement {
	h, held := s.pool.Lookup(key)
	if held && h.State.Phase == job.Claimed && !bytes.Equal(h.State.Client, client) {
		// Held for another client: the other replicas may have seen that
		// claim released or ended (a release that missed this node), and
		// one such stale replica beside one faulty one leaves no quorum.
		// Ask them now rather than at the next republish, and void the
		// claim if it never got its certificate (void.go).
		s.pool.Resync(key)
		if s.voidUncertified(key, h.State, now) {
			h, held = s.pool.Lookup(key)
		}
	}
	otherCopy := held && s.pool.OtherCopyHeldBy(key, client)
	s.mu.Lock()
	g := s.srv.Grant(string(key), held, h.State, client, otherCopy, now)
	s.mu.Unlock()
	if g.Temp != nil {
		s.watchLapse(key, g.Temp)
	}
	s.mReplies.WithLabelValues(g.Kind.String()).Inc()
	if g.Kind == claim.Denied {
		s.why.add("deny: " + g.Reason)
	}
	return claim.Statement{Kind: g.Kind, Job: key, Client: client, Node: []byte(s.ep.ID()), At: now, Busy: g.Busy, Start: g.Start}
}

// refused counts a refused confirm, with its reason.
func (s *Service) refused(err error) {
	s.mConfirm.WithLabelValues("refused").Inc()
	s.why.add(refuseReason(err))
}

func (s *Service) handleConfirm(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ConfirmRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	client := []byte(from.Identity.PublicKey)
	now := s.now()
	h, held := s.pool.Lookup(req.Job)
	if !held {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x not held here", req.Job))
	}
	sigs := newBatch(len(req.Replies))
	replies, err := s.checkReplies(&req, from, client, now, sigs)
	if err != nil {
		return nil, err
	}
	if err := s.verifyReplies(&req, from, replies, sigs); err != nil {
		return nil, err
	}
	start, err := s.confirmChecked(&req, h, client, replies, now.UnixMilli())
	if err != nil {
		return nil, err
	}
	return s.accept(req.Job, client, start, now.UnixMilli())
}

// accept is this node's signed acceptance of the claim (client, start) of
// job key: one of the quorum that makes the claim's certificate.
func (s *Service) accept(key, client []byte, start, now int64) (*wire.ConfirmResponse, error) {
	b, err := claim.Sign(claim.Statement{Kind: claim.Accepted, Job: key, Client: client, Node: []byte(s.ep.ID()), At: now, Start: start},
		s.id.Cert.Raw, s.id.Position.Marshal(), s.id.PeerSign)
	if err != nil {
		return nil, fmt.Errorf("sign acceptance of job %x: %w", key, err)
	}
	return &wire.ConfirmResponse{Accept: b}, nil
}

// handleCertify takes a won claim's certificate from its client: the
// claim (client, start, start + T_finish) merges with it as its proof, as
// if another node had synced it — kept with the claim held here, or the
// claim learned here if this node missed the confirm. A certificate that
// does not prove the claim is refused and kept as evidence against the
// client.
func (s *Service) handleCertify(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.CertifyRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	h, held := s.pool.Lookup(req.Job)
	if !held {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x not held here", req.Job))
	}
	st := job.State{Phase: job.Claimed, Client: []byte(from.Identity.PublicKey), Start: req.Start, Deadline: req.Start + h.TFinish}
	proof := (&job.Proof{Claim: claim.EncodeCertificate(req.Accepts)}).Encode()
	if _, err := s.pool.MergeFrom(from, wire.ProtoCertify, req.Job, st, proof); err != nil {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("certificate of job %x: %w", req.Job, err))
	}
	return &wire.Ping{}, nil
}

// onChange follows a held job's state into the claim log: records of a
// deleted job go, and a job ready again before a claim's deadline had that
// claim released (the release came by replication).
func (s *Service) onChange(key []byte, st job.State, deleted bool) {
	now := s.now().UnixMilli()
	s.mu.Lock()
	s.srv.Changed(string(key), st, deleted, now)
	s.mu.Unlock()
}

// checkReply checks the signed reply i of a confirm: a node's, for this
// job and client, from a valid node certificate bound to the node the
// reply names (bind: the account's position record names it, and the
// named peer's key signed the reply); its peer signature is queued on
// sigs, for the caller to verify with the others', unless the reply is,
// byte for byte, one this node signed and sent itself. A reply not bound
// to its node fails with ErrUnbound, and the returned Reply names the
// node it claimed to be from.
func (s *Service) checkReply(i int, b, jobKey, client []byte, now time.Time, sigs *batch) (claim.Reply, error) {
	signed, st, err := claim.Decode(b)
	if err != nil {
		return claim.Reply{}, err
	}
	if string(st.Job) != string(jobKey) || string(st.Client) != string(client) {
		return claim.Reply{}, fmt.Errorf("a reply is for another job or client")
	}
	reply := claim.Reply{Node: string(st.Node), Kind: st.Kind, At: st.At}
	account := s.id.Key.Public().(ed25519.PublicKey)
	name := s.id.Name
	if peer.ID(st.Node) != s.ep.ID() {
		id, err := s.ep.Admission().Verifier().VerifyCert(signed.Cert, now, certs.RoleNode)
		if err != nil {
			return claim.Reply{}, fmt.Errorf("reply of node %s: %w", peer.ID(st.Node), err)
		}
		account, name = id.PublicKey, id.Name
	} else if s.own.take(b) {
		return reply, nil // the very bytes this node signed
	}
	if err := s.bind(i, signed, st, account, sigs); err != nil {
		return reply, fmt.Errorf("reply of node %s signed by %q: %w", peer.ID(st.Node), name, err)
	}
	return reply, nil
}

func (s *Service) handleRelease(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ReleaseRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	client := []byte(from.Identity.PublicKey)
	s.mu.Lock()
	ended := s.srv.EndTemp(string(req.Job), client)
	s.mu.Unlock()
	if ended {
		s.tempEnded(req.Job)
	}
	if len(req.Sig) > 0 && !sigverify.Verify(ed25519.PublicKey(client), claim.ReleaseStatement(req.Job, client, req.Start), req.Sig) {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("release of job %x: not signed by client %q", req.Job, from.Identity.Name))
	}
	h, ok := s.pool.Lookup(req.Job)
	if ok && req.Repair {
		// The client found nodes among the job's closest without it (a
		// holder left and the next closest was not handed the job yet):
		// resync now. A lying client costs r − 1 syncs per job per
		// ResyncInterval at most, what one republish round costs anyway.
		s.pool.Resync(req.Job)
	}
	if ok {
		rel, mine := claim.Release(h.State, client, s.now().UnixMilli())
		if mine {
			if _, err := s.pool.ApplyProven(req.Job, rel, s.releaseProof(req, rel, from)); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.srv.MarkReleased(string(req.Job), func(r claim.Record) bool { return string(r.Client) == string(client) })
			s.mu.Unlock()
		}
		s.noteRelease(req, from, mine || (ended && req.Reason != wire.SkipUnknown))
	}
	return &wire.Ping{}, nil
}

// releaseProof is the proof of the release rel its client asked for in
// req: the claim's certificate held here, the client's signature and its
// certificate. Nil (the release stays this node's own, never sent) when
// the client did not sign it, or this node holds no certificate of the
// claim.
func (s *Service) releaseProof(req wire.ReleaseRequest, rel job.State, from *overlay.Admitted) []byte {
	if len(req.Sig) == 0 || req.Start != rel.Start || from.Identity.Cert == nil {
		return nil
	}
	held, err := job.DecodeProof(s.pool.Proof(req.Job))
	if err != nil || len(held.Claim) == 0 {
		return nil
	}
	return (&job.Proof{Claim: held.Claim, Sig: req.Sig, Cert: from.Identity.Cert.Raw}).Encode()
}

// OnFreed registers f to be called with a job's key when a temporary
// claim on it ends here without a confirm — its client released it, or it
// lapsed — and the job is still free (claim.Frees): the node's index
// writer then has the job's entries served again at once. Register before
// the service is used.
func (s *Service) OnFreed(f func(key []byte)) {
	s.mu.Lock()
	s.freed = append(s.freed, f)
	s.mu.Unlock()
}

// tempEnded tells the OnFreed callbacks of a job whose temporary claim
// ended unconfirmed, if the job is free.
func (s *Service) tempEnded(key []byte) {
	h, held := s.pool.Lookup(key)
	if !claim.Frees(held, h.State) {
		return
	}
	s.mu.Lock()
	fs := slices.Clone(s.freed)
	s.mu.Unlock()
	for _, f := range fs {
		f(key)
	}
}

// watchLapse has the claim machine check, T_claim after it was granted,
// whether the temporary claim t on the job lapsed unconfirmed (claim
// Server.Lapse); then the job is freed.
func (s *Service) watchLapse(key []byte, t *claim.Temp) {
	key = slices.Clone(key)
	time.AfterFunc(s.cfg.TClaim+time.Millisecond, func() {
		s.mu.Lock()
		lapsed := s.srv.Lapse(string(key), t, s.now().UnixMilli())
		s.mu.Unlock()
		if lapsed {
			s.tempEnded(key)
		}
	})
}
