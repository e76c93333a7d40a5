// Package claimnet is the node side of the claim protocol: grant,
// confirm, release and certify handlers around claim.Decide and
// claim.CheckConfirm, temporary claims in memory, permanent claims through
// the job pool, the proof checker that merges claims from other nodes,
// and the per-client rate limit on claims. A confirm's replies are checked
// together, in one batch verification. The client side (the Claimer) is
// package claimclient, which links no pool.
package claimnet

import (
	"bytes"
	"cmp"
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
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// Config configures a node's claim service. Zero values take the defaults.
type Config struct {
	// TClaim is how long a temporary claim lasts without a confirm.
	// Default 15 s.
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
	// make at this node, Burst the burst. Defaults 20 and 40.
	Limit float64
	Burst int
	// Warmup is how long after the service starts a node whose routing
	// table knows fewer than r nodes accepts confirm replies from nodes
	// it cannot place (see claim.CanJudge). Default 1 min.
	Warmup time.Duration
	// TCert is how long a claim this node accepted may go without its
	// certificate (the client's /up/claim/certify, or a sync carrying it)
	// before the node voids it when another client asks for the job
	// (void.go). Default 1 min.
	TCert time.Duration
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger receives structured logs.
	Logger *slog.Logger
}

// Record is one permanent claim this node made, for audit. Released is
// set when the client gave it back (its confirm failed elsewhere, or it
// gave up the job), whether its release reached this node or came by
// replication from another (the job ready again before the deadline).
type Record struct {
	Job      []byte
	Client   []byte
	Start    int64
	Deadline int64
	Released bool
	At       int64 // ms on this node's clock: when it accepted the confirm
}

// Service answers claims for the jobs a node holds.
type Service struct {
	cfg     Config
	ep      *overlay.Endpoint
	d       *dht.DHT
	pool    *pool.Pool
	id      *keystore.Identity
	limiter *overlay.RateLimiter
	started int64 // Unix ms, for claim.CanJudge

	mu    sync.Mutex
	temps map[string]*claim.Temp
	// claims holds, per job this node still holds, the permanent claims it
	// made (in order); a job's records go when the job leaves the store
	// (collected and kept T_collect, or handed on), so the log is bounded
	// by the jobs held.
	claims map[string]*jobClaims
	seq    uint64      // order of records across jobs, for Log
	keys   *keyCache   // expanded node keys, for batch verification
	own    *ownReplies // digests of the replies this node signed lately
	freed  []func(key []byte)
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
}

// NewService serves the claim protocols on a node.
func NewService(ep *overlay.Endpoint, d *dht.DHT, p *pool.Pool, id *keystore.Identity, cfg Config) *Service {
	if cfg.TClaim == 0 {
		cfg.TClaim = 15 * time.Second
	}
	if cfg.TSkew == 0 {
		cfg.TSkew = time.Duration(claim.DefaultTSkew) * time.Millisecond
	}
	if cfg.Limit == 0 {
		cfg.Limit = 20
	}
	if cfg.Burst == 0 {
		cfg.Burst = 40
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = time.Minute
	}
	if cfg.TCert == 0 {
		cfg.TCert = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// The service signs as the identity its host runs under: a snapshot,
	// since a move rotates id's peer key and position for the next host
	// while this one may still be answering.
	snapshot := *id
	s := &Service{cfg: cfg, ep: ep, d: d, pool: p, id: &snapshot, temps: map[string]*claim.Temp{}, keys: newKeyCache(4096),
		started: cfg.Now().UnixMilli(),
		own:     newOwnReplies(1<<14, 2*cfg.TClaim.Milliseconds()),
		limiter: overlay.NewRateLimiter(cfg.Limit, cfg.Burst, cfg.Now)}
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
		Name: "up_claims_voided_total", Help: "Claims accepted here that got no certificate within T_cert and were voided when another client asked.",
	})
	ep.Metrics().Registry.MustRegister(s.mReplies, s.mConfirm, s.mForged, s.mVoided)
	s.claims = map[string]*jobClaims{}
	p.OnChange(s.onChange)
	clients := []certs.Role{certs.RoleClient}
	ep.Handle(wire.ProtoClaim, 1024, clients, s.handleClaim)
	ep.Handle(wire.ProtoConfirm, 1<<20, clients, s.handleConfirm)
	ep.Handle(wire.ProtoRelease, 1024, clients, s.handleRelease)
	ep.Handle(wire.ProtoCertify, 1<<20, clients, s.handleCertify)
	return s
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

// jobClaims are one held job's permanent claims at this node.
type jobClaims struct {
	recs []Record
	seqs []uint64 // order of each record in the whole log
	// closed is set once the job is finished or collected: its claims are
	// past releasing.
	closed bool
}

// Log returns the permanent claims this node made on the jobs it still
// holds, in the order it made them.
func (s *Service) Log() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	type seqRec struct {
		seq uint64
		rec Record
	}
	var all []seqRec
	for _, jc := range s.claims {
		for i, r := range jc.recs {
			all = append(all, seqRec{jc.seqs[i], r})
		}
	}
	slices.SortFunc(all, func(a, b seqRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Record, len(all))
	for i, sr := range all {
		out[i] = sr.rec
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
	now := s.cfg.Now().UnixMilli()
	h, held := s.pool.Lookup(req.Job)
	if held && h.State.Phase == job.Claimed && !bytes.Equal(h.State.Client, client) {
		// Held for another client: the other replicas may have seen that
		// claim released or ended (a release that missed this node), and
		// one such stale replica beside one faulty one leaves no quorum.
		// Ask them now rather than at the next republish, and void the
		// claim if it never got its certificate (void.go).
		s.pool.Resync(req.Job)
		if s.voidUncertified(req.Job, h.State, now) {
			h, held = s.pool.Lookup(req.Job)
		}
	}
	s.mu.Lock()
	temp := s.temps[string(req.Job)]
	if temp != nil && now >= temp.Until {
		delete(s.temps, string(req.Job))
		temp = nil
	}
	d := claim.Decide(held, h.State, temp, client, now, s.cfg.TClaim.Milliseconds())
	if d.Temp != nil {
		s.temps[string(req.Job)] = d.Temp
		s.watchLapse(req.Job, d.Temp)
	}
	if len(s.temps) > 100000 {
		s.sweepLocked(now)
	}
	s.mu.Unlock()
	s.mReplies.WithLabelValues(d.Kind.String()).Inc()
	if d.Kind == claim.Denied {
		s.why.add("deny: " + d.Reason)
	}
	stmt := claim.Statement{Kind: d.Kind, Job: req.Job, Client: client, Node: []byte(s.ep.ID()), At: now, Busy: d.Busy}
	if d.Kind == claim.Granted && h.State.Phase == job.Ready {
		stmt.Start = h.State.Start // the ended claim's: the new one must start after it
	}
	signed, err := claim.Sign(stmt,
		s.id.Cert.Raw, s.id.Position.Marshal(), s.id.Key, s.id.PeerKey.Sign)
	if err != nil {
		return nil, err
	}
	s.own.add(signed, now)
	return &wire.ClaimResponse{Reply: signed}, nil
}

// refused counts a refused confirm, with its reason.
func (s *Service) refused(err error) {
	s.mConfirm.WithLabelValues("refused").Inc()
	s.why.add(refuseReason(err))
}

func (s *Service) sweepLocked(now int64) {
	for k, t := range s.temps {
		if now >= t.Until {
			delete(s.temps, k)
		}
	}
}

func (s *Service) handleConfirm(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ConfirmRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	client := []byte(from.Identity.PublicKey)
	now := s.cfg.Now()
	nowMS := now.UnixMilli()
	h, held := s.pool.Lookup(req.Job)
	if !held {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x not held here", req.Job))
	}
	replies := make([]claim.Reply, 0, len(req.Replies))
	sigs := newBatch(s.keys, len(req.Replies))
	for i, b := range req.Replies {
		r, err := s.checkReply(i, b, req.Job, client, now, sigs)
		if errors.Is(err, ErrUnbound) {
			s.attribute(b, from.Identity.Name, peer.ID(r.Node), err)
		}
		if err != nil {
			s.refused(err)
			return nil, overlay.StatusErr(wire.StatusUnauthorized, err)
		}
		replies = append(replies, r)
	}
	if bad := sigs.verify(); bad >= 0 {
		s.refused(claim.ErrBadSignature)
		s.attribute(req.Replies[bad], from.Identity.Name, peer.ID(replies[bad].Node), claim.ErrBadSignature)
		return nil, overlay.StatusErr(wire.StatusUnauthorized,
			fmt.Errorf("reply of node %s: %w", peer.ID(replies[bad].Node), claim.ErrBadSignature))
	}
	near, need := nearRule(s.d, h.Pos, nowMS-s.started, s.cfg.Warmup.Milliseconds()) // up to f of the r may deny or be silent
	s.mu.Lock()
	temp := s.temps[string(req.Job)]
	st, err := claim.CheckConfirm(h.State, temp, client, replies, need, near, req.Start, h.TFinish, nowMS, s.cfg.TSkew.Milliseconds())
	s.mu.Unlock()
	if err != nil {
		s.refused(err)
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("confirm of job %x: %w", req.Job, err))
	}
	if s.beforeConfirmApply != nil {
		s.beforeConfirmApply(req.Job)
	}
	merged, err := s.pool.Apply(req.Job, st)
	if err != nil {
		return nil, err
	}
	// The claim holds only if it is the job's state now (a release or a
	// result may have been merged in meanwhile).
	if merged.Phase != job.Claimed || string(merged.Client) != string(client) || merged.Start != st.Start || merged.Deadline != st.Deadline {
		s.refused(errors.New("the claim was released"))
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("confirm of job %x: the claim was released", req.Job))
	}
	s.mu.Lock()
	if s.temps[string(req.Job)] != temp {
		// The client released the job while this confirm was applied: the
		// release ended the temporary claim and found no claim to end, so
		// the claim would outlive it here, uncertified, denying everyone.
		s.mu.Unlock()
		if rel, mine := claim.Release(st, client, nowMS); mine {
			_, _ = s.pool.Apply(req.Job, rel)
		}
		s.refused(errors.New("the claim was released meanwhile"))
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("confirm of job %x: the claim was released meanwhile", req.Job))
	}
	delete(s.temps, string(req.Job))
	jc := s.claims[string(req.Job)]
	if jc == nil {
		jc = &jobClaims{}
		s.claims[string(req.Job)] = jc
	}
	s.seq++
	jc.recs = append(jc.recs, Record{Job: req.Job, Client: client, Start: st.Start, Deadline: st.Deadline, At: nowMS})
	jc.seqs = append(jc.seqs, s.seq)
	s.mu.Unlock()
	s.mConfirm.WithLabelValues("claimed").Inc()
	return s.accept(req.Job, client, st.Start, nowMS)
}

// accept is this node's signed acceptance of the claim (client, start) of
// job key: one of the quorum that makes the claim's certificate.
func (s *Service) accept(key, client []byte, start, now int64) (*wire.ConfirmResponse, error) {
	b, err := claim.Sign(claim.Statement{Kind: claim.Accepted, Job: key, Client: client, Node: []byte(s.ep.ID()), At: now, Start: start},
		s.id.Cert.Raw, s.id.Position.Marshal(), s.id.Key, s.id.PeerKey.Sign)
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

// onChange marks the claims of a job that became ready before their
// deadline as released: the release came by replication.
func (s *Service) onChange(key []byte, st job.State, deleted bool) {
	if deleted {
		s.mu.Lock()
		delete(s.claims, string(key))
		s.mu.Unlock()
		return
	}
	if st.Phase == job.Finished || st.Phase == job.Collected {
		s.mu.Lock()
		if jc := s.claims[string(key)]; jc != nil {
			jc.closed = true // past releasing
		}
		s.mu.Unlock()
		return
	}
	if st.Phase != job.Ready {
		return
	}
	now := s.cfg.Now().UnixMilli()
	s.mu.Lock()
	s.releasedLocked(key, func(r Record) bool { return now < r.Deadline })
	s.mu.Unlock()
}

// releasedLocked marks the job's open claims that match as released.
// s.mu is held.
func (s *Service) releasedLocked(key []byte, match func(Record) bool) {
	jc := s.claims[string(key)]
	if jc == nil || jc.closed {
		return
	}
	for i := range jc.recs {
		if !jc.recs[i].Released && match(jc.recs[i]) {
			jc.recs[i].Released = true
		}
	}
}

// checkReply checks the signed reply i of a confirm: a node's, for this
// job and client, from a valid node certificate bound to the node the
// reply names (bind: the account's position record names it, and the
// named peer's key signed the reply too); its signatures are queued on
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
	pub := s.id.Key.Public().(ed25519.PublicKey)
	if peer.ID(st.Node) != s.ep.ID() {
		id, err := s.ep.Admission().Verifier().VerifyCert(signed.Cert, now, certs.RoleNode)
		if err != nil {
			return claim.Reply{}, fmt.Errorf("reply of node %s: %w", peer.ID(st.Node), err)
		}
		pub = id.PublicKey
		if err := s.bind(i, signed, st, pub, sigs); err != nil {
			return reply, fmt.Errorf("reply of node %s signed by %q: %w", peer.ID(st.Node), id.Name, err)
		}
	} else if s.own.take(b) {
		return reply, nil // the very bytes this node signed
	}
	sigs.add(i, pub, signed.Message(), signed.Sig)
	return reply, nil
}

func (s *Service) handleRelease(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ReleaseRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	client := []byte(from.Identity.PublicKey)
	s.mu.Lock()
	t := s.temps[string(req.Job)]
	ended := t != nil && string(t.Client) == string(client)
	if ended {
		delete(s.temps, string(req.Job))
	}
	s.mu.Unlock()
	if ended {
		s.tempEnded(req.Job)
	}
	if len(req.Sig) > 0 && !ed25519.Verify(ed25519.PublicKey(client), claim.ReleaseStatement(req.Job, client, req.Start), req.Sig) {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("release of job %x: not signed by client %q", req.Job, from.Identity.Name))
	}
	if h, ok := s.pool.Lookup(req.Job); ok {
		if rel, mine := claim.Release(h.State, client, s.cfg.Now().UnixMilli()); mine {
			if _, err := s.pool.ApplyProven(req.Job, rel, s.releaseProof(req, rel, from)); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.releasedLocked(req.Job, func(r Record) bool { return string(r.Client) == string(client) })
			s.mu.Unlock()
		}
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

// watchLapse checks, T_claim after it was granted, whether the temporary
// claim t on the job lapsed unconfirmed (its client gave up without a
// release: it crashed, or lost its connection): then it is dropped and the
// job freed. A claim confirmed, released or replaced meanwhile is no
// longer t. s.mu is held.
func (s *Service) watchLapse(key []byte, t *claim.Temp) {
	key = slices.Clone(key)
	time.AfterFunc(s.cfg.TClaim+time.Millisecond, func() {
		s.mu.Lock()
		lapsed := s.temps[string(key)] == t && s.cfg.Now().UnixMilli() >= t.Until
		if lapsed {
			delete(s.temps, string(key))
		}
		s.mu.Unlock()
		if lapsed {
			s.tempEnded(key)
		}
	})
}
