package creditnet

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/recent"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// receiptNS is the store namespace: key client(32 bytes) + project name,
// value the CBOR array of the kept signed receipts, oldest first.
const receiptNS = "credit"

// Reasons a put is refused: the labels of up_credit_refused_total.
const (
	ReasonMalformed   = "malformed"   // a message or receipt that does not decode
	ReasonCertificate = "certificate" // not a project's certificate of the CA, not the receipt's, revoked
	ReasonSignature   = "signature"   // forged, or altered after signing
	ReasonFuture      = "future"      // dated ahead of this node's clock
	ReasonFull        = "full"        // over MaxClients or MaxProjectsPerClient
)

// kept is one stored receipt.
type kept struct {
	seq uint64
	enc []byte // credit.Signed, encoded
}

// account is what this node holds for one client.
type account struct {
	pos      keyspace.Pos
	projects map[string][]kept // by project name, oldest first
	pushed   map[peer.ID]bool  // nodes given every receipt here since the last change
	version  uint64            // counts changes, so a push of an older set marks nothing
}

// Service is a node's credit receipt store and the credit protocols it
// serves. Safe for concurrent use.
type Service struct {
	cfg Config
	env overlay.Env
	ep  *overlay.Endpoint
	dht *dht.DHT
	st  *store.Store
	log *slog.Logger
	r   int

	id *keystore.Identity // signs tickets: a snapshot (a move rotates the node's)

	mu       sync.Mutex
	accounts map[string]*account // by client key
	book     *quota.Book         // clients' quotas of jobs in progress (quota.go)
	rng      *rand.Rand          // draws the audits (audit.go); made on first use
	// places holds the place key each ticket named (claim.Statement.Place),
	// by client and job, for the audit of the job's report: the nodes a
	// claim with the ticket asked held the job at that place. Bounded;
	// a place forgotten makes the audit ask the job key's nodes.
	places *recent.Map[string, []byte]

	mRefused *prometheus.CounterVec
	mStored  prometheus.Counter
	mTickets *prometheus.CounterVec
	mReports *prometheus.CounterVec
	mAudits  *prometheus.CounterVec
	mHeld    prometheus.GaugeFunc
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New opens the node's receipt store and serves the credit protocols:
// cfg's defaults applied, then validated.
func New(deps Deps, cfg Config) (*Service, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	snapshot := *deps.Identity
	s := &Service{cfg: cfg, env: deps.Env, ep: deps.Endpoint, dht: deps.DHT, st: deps.Store, log: deps.Env.Logger,
		r: deps.DHT.Replication(), accounts: map[string]*account{}, id: &snapshot, book: quota.NewBook(cfg.Quota),
		places: recent.NewMap[string, []byte](maxTicketPlaces)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.load(); err != nil {
		return nil, err
	}
	if err := s.loadQuota(); err != nil {
		return nil, err
	}
	s.registerMetrics(s.ep.Metrics().Registry)
	s.ep.Handle(wire.ProtoCreditPut, wire.MaxCreditPutFrame, nil, s.handlePut)
	s.ep.Handle(wire.ProtoCreditGet, wire.MaxCreditGetFrame, nil, s.handleGet)
	s.ep.Handle(wire.ProtoQuotaTicket, wire.MaxQuotaFrame, []certs.Role{certs.RoleClient}, s.handleTicket)
	s.ep.Handle(wire.ProtoQuotaReport, wire.MaxQuotaFrame, []certs.Role{certs.RoleClient, certs.RoleNode}, s.handleReport)
	s.ep.Handle(wire.ProtoQuotaTicketMany, wire.MaxQuotaFrame+wire.MaxClaimMany*(wire.MaxJobKeyLen+8), []certs.Role{certs.RoleClient}, s.handleTicketMany)
	s.ep.Handle(wire.ProtoQuotaTicketManyOwn, wire.MaxQuotaFrame+wire.MaxClaimMany*(wire.MaxJobKeyLen+8), []certs.Role{certs.RoleClient}, s.handleTicketManyOwn)
	s.ep.Handle(wire.ProtoQuotaReportManyOwn, wire.MaxQuotaFrame, []certs.Role{certs.RoleClient}, s.handleReportMany)
	if !cfg.DisableLoops {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.repairLoop()
		}()
	}
	return s, nil
}

func (s *Service) registerMetrics(reg *prometheus.Registry) {
	s.mRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_credit_refused_total",
		Help: "Credit receipt puts refused, by reason (malformed, certificate, signature, future, full).",
	}, []string{"reason"})
	s.mStored = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_credit_receipts_stored_total", Help: "Credit receipts newly stored.",
	})
	s.mHeld = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_credit_receipts_held", Help: "Credit receipts this node holds.",
	}, func() float64 { return float64(s.Held()) })
	s.mTickets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_quota_tickets_total", Help: "Quota tickets asked of this node as a client's record node, by answer (given, refused).",
	}, []string{"answer"})
	s.mReports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_quota_reports_total", Help: "Clients' reports of how a job they held ended, by outcome (done, released, failed).",
	}, []string{"outcome"})
	s.mAudits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_quota_audits_total", Help: "Reported job ends audited with the job's nodes, by finding (done; lie: still claimed by the client; lookup: the nearest in the node's own view were not the job's nodes, so the place was looked up).",
	}, []string{"finding"})
	reg.MustRegister(s.mRefused, s.mStored, s.mHeld, s.mTickets, s.mReports, s.mAudits)
}

// Close stops the repair loop. The store is the node's to close.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// Held is how many receipts this node holds.
func (s *Service) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.accounts {
		for _, ks := range a.projects {
			n += len(ks)
		}
	}
	return n
}

// Receipts returns the receipts held for client, each project's newest
// first, then the older ones, while they fit maxBytes and maxCount.
func (s *Service) Receipts(client []byte, maxBytes, maxCount int) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[string(client)]
	if a == nil {
		return nil
	}
	names := make([]string, 0, len(a.projects))
	for name := range a.projects {
		names = append(names, name)
	}
	slices.Sort(names)
	var out [][]byte
	size := 0
	for age := 0; age < s.cfg.KeepPerProject; age++ {
		for _, name := range names {
			ks := a.projects[name]
			if age >= len(ks) {
				continue
			}
			b := ks[len(ks)-1-age].enc
			if len(out) == maxCount || size+len(b)+8 > maxBytes {
				return out
			}
			out = append(out, b)
			size += len(b) + 8
		}
	}
	return out
}

func accountKey(client []byte, project string) []byte {
	return store.Key(receiptNS, append(slices.Clip(client), project...))
}

// load reads the stored receipts. A record that no longer decodes is
// logged and left out (its receipts are verified again by every reader).
func (s *Service) load() error {
	var bad []error
	err := s.st.Scan(store.Key(receiptNS), func(k, v []byte) bool {
		var encs [][]byte
		if err := codec.Unmarshal(v, &encs); err != nil {
			bad = append(bad, fmt.Errorf("stored receipts %x: %w", k, err))
			return true
		}
		for _, b := range encs {
			_, r, err := credit.Decode(b)
			if err != nil {
				bad = append(bad, fmt.Errorf("stored receipt %x: %w", k, err))
				continue
			}
			a := s.accountLocked(r.Client)
			a.projects[r.Project] = append(a.projects[r.Project], kept{seq: r.Seq, enc: append([]byte(nil), b...)})
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("creditnet: load receipts: %w", err)
	}
	for _, a := range s.accounts {
		for _, ks := range a.projects {
			slices.SortFunc(ks, func(x, y kept) int { return cmp.Compare(x.seq, y.seq) })
		}
	}
	if len(bad) > 0 {
		s.log.Warn("credit receipts left out at load", "count", len(bad), "first", bad[0])
	}
	return nil
}

// accountLocked returns client's account, made when missing. s.mu is held.
func (s *Service) accountLocked(client []byte) *account {
	a := s.accounts[string(client)]
	if a == nil {
		a = &account{pos: keyspace.KeyPos(credit.Key(ed25519.PublicKey(client))), projects: map[string][]kept{}, pushed: map[peer.ID]bool{}}
		s.accounts[string(client)] = a
	}
	return a
}

// refuse counts a refusal by reason and returns it as the reply's error.
func (s *Service) refuse(from *overlay.Admitted, reason string, status wire.Status, err error) error {
	s.mRefused.WithLabelValues(reason).Inc()
	s.log.Info("credit put refused", "from", from.Peer, "name", from.Identity.Name, "role", from.Role(), "reason", reason, "err", err)
	return overlay.StatusErr(status, err)
}

// reasonOf maps a receipt's rejection to its refusal reason and status.
func reasonOf(err error) (string, wire.Status) {
	switch {
	case errors.Is(err, credit.ErrCertificate):
		return ReasonCertificate, wire.StatusUnauthorized
	case errors.Is(err, credit.ErrBadSignature):
		return ReasonSignature, wire.StatusUnauthorized
	case errors.Is(err, credit.ErrFuture):
		return ReasonFuture, wire.StatusBadRequest
	}
	return ReasonMalformed, wire.StatusBadRequest
}
