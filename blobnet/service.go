package blobnet

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// held is a blob this node stores, in memory; its chunks are on disk.
type held struct {
	adm       *blob.Admitted
	key       string // the manifest's CID bytes
	pos       keyspace.Pos
	project   string
	size      int64     // bytes, the manifest's
	expires   int64     // the statement's expiry, Unix ms on its project's clock
	created   int64     // the statement's creation, Unix ms on its project's clock
	outlive   int64     // the latest expiry of the statements it superseded (0: none)
	offered   int64     // when this node accepted it, Unix ms on its own clock
	certRef   string    // the statement's CertRef
	statement []byte    // the signed statement, encoded
	manifest  []byte    // the manifest, encoded
	chunks    []cid.Cid // the distinct chunks it lists, in manifest order
	missing   int       // how many of chunks this node lacks
}

// usage is what one project has stored on this node.
type usage struct {
	bytes int64 // sum of its blobs' sizes
	blobs int
}

// Service is a node's blob store and the blob protocols it serves. Safe
// for concurrent use.
type Service struct {
	cfg Config
	env overlay.Env
	ep  *overlay.Endpoint
	dht *dht.DHT
	st  *store.Store
	log *slog.Logger
	r   int

	mu      sync.Mutex
	blobs   map[string]*held            // by blob key
	gone    map[string]tombstone        // withdrawn blobs, by key
	chunks  map[cid.Cid]int             // chunks on disk: their length, bytes
	refs    map[cid.Cid]map[string]bool // the held blobs listing each chunk
	usage   map[string]usage            // by project name
	certs   map[string][]byte           // project certificates (DER) by CertRef
	placing map[string]*placeRun        // placements under way, by blob key
	rng     *rand.Rand                  // the round jitter

	refMu   sync.Mutex     // guards refused, apart from mu: refusals are counted with mu held
	refused map[string]int // refusals by reason, as counted in mRefused

	mRefused *prometheus.CounterVec
	mStored  *prometheus.CounterVec
	mDeleted *prometheus.CounterVec
	mPushed  prometheus.Counter
	mPushedB prometheus.Counter
	mHeld    prometheus.GaugeFunc
	mHeldB   prometheus.GaugeFunc
	pushedN  atomic.Int64 // chunks pushed, as mPushed counts them
	pushedB  atomic.Int64 // chunk bytes pushed, as mPushedB counts them
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New opens the node's blob store and serves the blob protocols: cfg's
// defaults applied, then validated.
func New(deps Deps, cfg Config) (*Service, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	ep := deps.Endpoint
	s := &Service{
		cfg: cfg, env: deps.Env, ep: ep, dht: deps.DHT, st: deps.Store, log: deps.Env.Logger, r: deps.DHT.Replication(),
		blobs: map[string]*held{}, gone: map[string]tombstone{}, chunks: map[cid.Cid]int{}, refs: map[cid.Cid]map[string]bool{},
		usage: map[string]usage{}, certs: map[string][]byte{}, placing: map[string]*placeRun{}, refused: map[string]int{},
		rng: rand.New(rand.NewPCG(deps.Env.Seed, keyspace.Seed([]byte(ep.ID()), 20))),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.load(); err != nil {
		return nil, err
	}
	s.registerMetrics(ep.Metrics().Registry)
	roles := []certs.Role{certs.RoleProject, certs.RoleNode}
	ep.Handle(wire.ProtoBlobOffer, wire.MaxBlobOfferFrame, roles, s.handleOffer)
	ep.Handle(wire.ProtoChunkPut, wire.MaxChunkFrame, roles, s.handlePut)
	ep.Handle(wire.ProtoManifestGet, wire.MaxBlobGetFrame, nil, s.handleManifestGet)
	ep.Handle(wire.ProtoChunkGet, wire.MaxBlobGetFrame, nil, s.handleChunkGet)
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
		Name: "up_blob_refused_total",
		Help: "Blob offers and chunks refused, by reason (malformed, certificate, signature, wrong_project, wrong_manifest, expired, withdrawn, future, quota, unknown_blob, unlisted_chunk, bad_chunk).",
	}, []string{"reason"})
	s.mStored = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_blob_chunks_stored_total", Help: "Chunks newly stored, by sender role (project, node).",
	}, []string{"source"})
	s.mDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_blobs_deleted_total", Help: "Blobs deleted, by why (expired, incomplete, handed).",
	}, []string{"why"})
	s.mPushed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_blob_chunks_pushed_total", Help: "Chunks this node sent to nodes lacking them (placement and repair).",
	})
	s.mPushedB = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_blob_pushed_bytes_total", Help: "Chunk bytes this node sent to nodes lacking them (placement and repair).",
	})
	s.mHeld = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_blobs_held", Help: "Blobs this node holds, complete or not.",
	}, func() float64 { return float64(s.Len()) })
	s.mHeldB = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_blob_chunk_bytes_held", Help: "Bytes of the distinct chunks this node stores.",
	}, func() float64 { return float64(s.ChunkBytes()) })
	reg.MustRegister(s.mRefused, s.mStored, s.mDeleted, s.mPushed, s.mPushedB, s.mHeld, s.mHeldB)
}

// Close stops the repair loop and waits for the placements under way.
// The store is the node's to close.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

func (s *Service) nowMS() int64 { return s.env.Now().UnixMilli() }

// load reads the certificates, blobs and chunk index from the store. A
// stored blob that no longer admits (a corrupt record) is logged and
// left out; chunks no held blob lists are deleted.
func (s *Service) load() error {
	err := s.st.Scan(store.Key(certNS), func(k, v []byte) bool {
		s.certs[string(k[len(certNS)+1:])] = append([]byte(nil), v...)
		return true
	})
	if err != nil {
		return fmt.Errorf("blobnet: load certificates: %w", err)
	}
	var bad []error
	err = s.st.Scan(store.Key(blobNS), func(k, v []byte) bool {
		h, err := s.loadRecord(v)
		if err != nil {
			bad = append(bad, fmt.Errorf("stored blob %x: %w", k[len(blobNS)+1:], err))
			return true
		}
		s.addLocked(h)
		return true
	})
	if err != nil {
		return fmt.Errorf("blobnet: load blobs: %w", err)
	}
	if err := s.loadWithdrawals(&bad); err != nil {
		return err
	}
	var orphans []cid.Cid
	err = s.st.Scan(store.Key(haveNS), func(k, v []byte) bool {
		c, err := cid.Cast(k[len(haveNS)+1:])
		n, lerr := decodeLen(v)
		if err != nil || lerr != nil {
			bad = append(bad, fmt.Errorf("stored chunk index %x: %w", k, errors.Join(err, lerr)))
			return true
		}
		if len(s.refs[c]) == 0 {
			orphans = append(orphans, c)
			return true
		}
		s.haveLocked(c, n)
		return true
	})
	if err != nil {
		return fmt.Errorf("blobnet: load chunk index: %w", err)
	}
	for _, e := range bad {
		s.log.Error("blob store", "err", e)
	}
	if len(orphans) > 0 {
		b := s.st.NewBatch()
		for _, c := range orphans {
			deleteChunk(b, c)
		}
		if err := b.Commit(true); err != nil {
			return fmt.Errorf("blobnet: delete %d orphan chunks: %w", len(orphans), err)
		}
	}
	return nil
}

// loadWithdrawals reads the tombstones and the superseded expiries.
func (s *Service) loadWithdrawals(bad *[]error) error {
	err := s.st.Scan(store.Key(goneNS), func(k, v []byte) bool {
		t, err := decodeTombstone(v)
		if err != nil {
			*bad = append(*bad, fmt.Errorf("stored tombstone %x: %w", k, err))
			return true
		}
		s.gone[string(k[len(goneNS)+1:])] = t
		return true
	})
	if err != nil {
		return fmt.Errorf("blobnet: load tombstones: %w", err)
	}
	err = s.st.Scan(store.Key(outNS), func(k, v []byte) bool {
		n, c := binary.Uvarint(v)
		if h, ok := s.blobs[string(k[len(outNS)+1:])]; ok && c == len(v) {
			h.outlive = int64(n)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("blobnet: load superseded expiries: %w", err)
	}
	return nil
}

// loadRecord rebuilds a held blob from its stored record, admitting it
// again with its project's key from the stored certificate.
func (s *Service) loadRecord(v []byte) (*held, error) {
	rec, err := decodeRecord(v)
	if err != nil {
		return nil, err
	}
	_, st, err := blob.DecodeStatement(rec.Statement)
	if err != nil {
		return nil, err
	}
	der, ok := s.certs[string(st.CertRef)]
	if !ok {
		return nil, fmt.Errorf("certificate %x of project %q not stored", st.CertRef, st.Project)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certificate of project %q: %w", st.Project, err)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("certificate of project %q has no Ed25519 key", st.Project)
	}
	adm, err := blob.Admit(rec.Statement, rec.Manifest, pub)
	if err != nil {
		return nil, err
	}
	return newHeld(adm, rec.Statement, rec.Manifest, rec.Offered), nil
}

func newHeld(adm *blob.Admitted, statement, manifest []byte, offered int64) *held {
	key := adm.Key.Bytes()
	h := &held{
		adm: adm, key: string(key), pos: keyspace.KeyPos(key), project: adm.Statement.Project,
		size: adm.Manifest.Size, expires: adm.Statement.Expires(), created: adm.Statement.Created, offered: offered,
		certRef: string(adm.Statement.CertRef), statement: statement, manifest: manifest,
	}
	cids, _ := adm.Manifest.ChunkCIDs() // admitted: they parse
	seen := make(map[cid.Cid]bool, len(cids))
	for _, c := range cids {
		if !seen[c] {
			seen[c] = true
			h.chunks = append(h.chunks, c)
		}
	}
	return h
}

// addLocked puts a held blob in memory: its chunks' references, its
// missing count and its project's usage. s.mu is held (or load runs).
func (s *Service) addLocked(h *held) {
	s.blobs[h.key] = h
	for _, c := range h.chunks {
		if s.refs[c] == nil {
			s.refs[c] = map[string]bool{}
		}
		s.refs[c][h.key] = true
		if _, ok := s.chunks[c]; !ok {
			h.missing++
		}
	}
	u := s.usage[h.project]
	u.bytes += h.size
	u.blobs++
	s.usage[h.project] = u
}

// haveLocked records chunk c (n bytes) as stored and counts it in every
// blob listing it. s.mu is held.
func (s *Service) haveLocked(c cid.Cid, n int) {
	if _, ok := s.chunks[c]; ok {
		return
	}
	s.chunks[c] = n
	for k := range s.refs[c] {
		s.blobs[k].missing--
	}
}

// Len is the number of blobs held, complete or not.
func (s *Service) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blobs)
}

// ChunkBytes is the bytes of the distinct chunks stored.
func (s *Service) ChunkBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, l := range s.chunks {
		n += int64(l)
	}
	return n
}

// Holds reports whether this node holds the blob key, and whether it
// holds every chunk of it.
func (s *Service) Holds(key []byte) (held, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.blobs[string(key)]
	return ok, ok && h.missing == 0
}

// HasChunk reports whether this node stores chunk c.
func (s *Service) HasChunk(c cid.Cid) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.chunks[c]
	return ok
}

// Usage is what a project has stored on this node: the bytes its quota
// counts (its blobs' sizes) and its blobs.
func (s *Service) Usage(project string) (bytes int64, blobs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage[project]
	return u.bytes, u.blobs
}

// Refused is how many offers and chunks were refused for reason (the
// label of up_blob_refused_total).
func (s *Service) Refused(reason string) int {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	return s.refused[reason]
}

// Pushed is how many chunks, and bytes of them, this node has sent to
// nodes lacking them (placements and repair) since it started.
func (s *Service) Pushed() (chunks, bytes int64) { return s.pushedN.Load(), s.pushedB.Load() }

// jitter returns the next round's wait: Interval ± Jitter, uniformly.
func (s *Service) jitter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.cfg.RepairJitter
	return s.cfg.RepairInterval - j + time.Duration(s.rng.Int64N(int64(2*j)+1))
}
