// Package project is the project-side library behind `up project`: it
// builds and signs job specifications with the project key and submits
// them to the overlay, counting a job as submitted only when r replicas
// hold it (thesis 3.2.1).
//
// A job file (jobfile.go: YAML or JSON, one job or a parameter sweep)
// expands into work units of one or more copies. The Ledger (ledger.go,
// SQLite through a pure-Go driver) records every job before it is sent
// and every result before the nodes are told it is collected, so
// SubmitFile and Harvest can be killed at any point and re-run without
// losing or doubling anything. Harvest (harvest.go) fetches, opens and
// verifies results, refusing copies a node altered; Validate
// (validate.go) compares a unit's copies under a quorum, and the ledger
// grants each client credit for its valid results only.
package project

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/wire"
)

// Project is a project workstation on the overlay.
type Project struct {
	a    *agent.Agent
	rand io.Reader
	mu   sync.Mutex
	// Of the identity, computed once (again should the identity's
	// certificate or result key be replaced): the result public key (an
	// X25519 scalar multiplication) and the certificate reference (a hash).
	derivedFor struct {
		cert *x509.Certificate
		key  *[32]byte
	}
	resultKey, certRef []byte
	keyCaches
	chunk int // jobs per submission round (default 1000)
	// creditAt is when this Project last issued credit receipts (its
	// clock; guarded by mu): HarvestOptions.CreditEvery.
	creditAt time.Time
	// recordedSince counts, per client key, the results harvests recorded
	// since its last receipt (guarded by mu; empty after a restart): only
	// a client with HarvestOptions.CreditAfter of them may be owed an
	// early receipt, so the ledger is asked about it and no other.
	recordedSince map[string]int
	// storeTimeout bounds one store call to a node (default
	// DefaultStoreTimeout): a node that takes the request and never
	// answers costs that long, then the job goes to its next closest.
	storeTimeout time.Duration
	noCrawl      bool // SetCrawl(false): place by the routing table only
	// walkBackoff is the wait before retrying a failed walk of the index
	// (default DefaultWalkBackoff); harvestIndex stands in for the index
	// client's Harvest in tests.
	walkBackoff  time.Duration
	harvestIndex func(ctx context.Context, keyword string, pageSize int, visit func([]wire.IndexHit) error) error
	// manifests are the encoded manifests of the blobs UploadFiles
	// uploaded, by key, for the ledger (SubmitUnits records which units
	// name which blob); guarded by mu.
	manifests map[string]BlobUse
}

// DefaultStoreTimeout bounds one store call, placement on the r replicas
// included: 30 s.
const DefaultStoreTimeout = 30 * time.Second

// SetStoreTimeout sets how long one store call to a node may take.
func (p *Project) SetStoreTimeout(d time.Duration) { p.storeTimeout = d }

// SetChunk sets how many jobs a submission sends and records per round.
func (p *Project) SetChunk(n int) { p.chunk = n }

// New wraps an agent whose identity is a project's.
func New(a *agent.Agent) (*Project, error) {
	if a.Identity().Role != certs.RoleProject {
		return nil, fmt.Errorf("identity %q is a %s, not a project", a.Identity().Name, a.Identity().Role)
	}
	return &Project{a: a, rand: rand.Reader, storeTimeout: DefaultStoreTimeout}, nil
}

// derived returns the identity's result public key and certificate
// reference; p.mu held.
func (p *Project) derived() (resultKey, certRef []byte) {
	id := p.a.Identity()
	if p.derivedFor.cert != id.Cert || p.derivedFor.key != id.ResultKey || p.certRef == nil {
		p.resultKey, p.certRef = id.ResultPublicKey(), job.CertRef(id.Cert.Raw)
		p.derivedFor.cert, p.derivedFor.key = id.Cert, id.ResultKey
	}
	return p.resultKey, p.certRef
}

// SetRand sets the source of job nonces (tests replay with a seeded one).
func (p *Project) SetRand(r io.Reader) { p.rand = r }

// Agent is the project's overlay presence.
func (p *Project) Agent() *agent.Agent { return p.a }

// Name is the project's name (its certificate's).
func (p *Project) Name() string { return p.a.Identity().Name }

// NewSpec returns a spec of this project for app with args and keywords,
// created now, living DefaultLifetime, with a fresh random nonce.
func (p *Project) NewSpec(app string, args, keywords []string, tFinish time.Duration) (*job.Spec, error) {
	nonce := make([]byte, job.NonceLen)
	p.mu.Lock()
	_, err := io.ReadFull(p.rand, nonce)
	resultKey, certRef := p.derived()
	p.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("job nonce: %w", err)
	}
	return &job.Spec{
		Version: job.WriteVersion, Project: p.Name(), App: app, Args: args,
		Keywords: keywords, TFinish: tFinish.Milliseconds(), Created: p.a.Now().UnixMilli(),
		Lifetime: DefaultLifetime.Milliseconds(), Nonce: nonce, CertRef: slices.Clone(certRef), ResultKey: slices.Clone(resultKey),
	}, nil
}

// Prepared is a job ready to submit: the signed spec and the signed
// listing that lets the index list it under its keywords. It caches the
// signed spec's encoding and CID, so the embedded job.Signed must not be
// changed once Encode or CID has been called: build a new one instead.
type Prepared struct {
	*job.Signed
	Listing []byte

	// Computed once (Sign fills them; else the first call, which must
	// not race with another): the signed spec's encoding and CID.
	enc   []byte
	cid   cid.Cid
	cids  string
	place []byte
}

// Encode is the signed spec's canonical encoding (job.Signed.Encode),
// computed once.
func (p *Prepared) Encode() []byte {
	if p.enc == nil {
		p.enc = p.Signed.Encode()
	}
	return p.enc
}

// CID is the job's identifier (job.Signed.CID), computed once.
func (p *Prepared) CID() cid.Cid {
	if !p.cid.Defined() {
		mh, err := multihash.Sum(p.Encode(), multihash.SHA2_256, -1)
		if err != nil {
			panic(err)
		}
		p.cid = cid.NewCidV1(cid.DagCBOR, mh)
	}
	return p.cid
}

// Key is the job's key in the overlay: the CID's bytes.
func (p *Prepared) Key() []byte { return p.CID().Bytes() }

// PlaceKey is the key whose position places the job (job.PlaceKey: its
// batch's, shared by the batch's jobs), computed once; a path that leads
// nowhere places it by its key (no node accepts it anyway).
func (p *Prepared) PlaceKey() []byte {
	if p.place == nil {
		root, _ := p.Signed.BatchRoot()
		p.place = job.PlaceKey(p.Key(), root)
	}
	return p.place
}

// cidString is CID().String(), computed once.
func (p *Prepared) cidString() string {
	if p.cids == "" {
		p.cids = p.CID().String()
	}
	return p.cids
}

// Sign signs a spec and its listing with the project key.
func (p *Project) Sign(spec *job.Spec) (*Prepared, error) {
	if spec.Project != p.Name() {
		return nil, fmt.Errorf("spec of project %q signed by project %q", spec.Project, p.Name())
	}
	key := p.a.Identity().Key
	s, enc, err := signSpec(spec, key)
	if err != nil {
		return nil, err
	}
	prep := &Prepared{Signed: s, enc: enc}
	prep.cidString()
	l, err := signListing(listingOf(prep.Key(), spec), key)
	if err != nil {
		return nil, err
	}
	prep.Listing = l.Encode()
	return prep, nil
}

// SignBatch signs specs and their listings with the project key: two
// signatures for the whole batch (job.SignBatch, job.SignListingBatch —
// the roots of a Merkle tree of the specs and of the listings), each job
// carrying its inclusion paths; nodes and index nodes verify each root
// once. A batch of one is Sign.
func (p *Project) SignBatch(specs []*job.Spec) ([]*Prepared, error) {
	if len(specs) == 1 {
		prep, err := p.Sign(specs[0])
		return []*Prepared{prep}, err
	}
	for _, spec := range specs {
		if spec.Project != p.Name() {
			return nil, fmt.Errorf("spec of project %q signed by project %q", spec.Project, p.Name())
		}
	}
	return signSpecBatch(specs, p.a.Identity().Key)
}

// signSpecBatch signs specs (two or more) and their listings with key,
// each kind under one batch signature.
func signSpecBatch(specs []*job.Spec, key ed25519.PrivateKey) ([]*Prepared, error) {
	batch, err := job.SignSpecBatch(specs, key)
	if err != nil {
		return nil, err
	}
	preps := make([]*Prepared, len(batch.Signed))
	listings := make([]*job.Listing, len(batch.Signed))
	for i, s := range batch.Signed {
		preps[i] = &Prepared{Signed: s, enc: batch.Encoded[i]}
		preps[i].cidString()
		listings[i] = listingOf(preps[i].Key(), specs[i])
		listings[i].Place = batch.Root
		preps[i].place = job.PlaceKey(preps[i].Key(), batch.Root)
	}
	sls, err := job.SignListingBatch(listings, key)
	if err != nil {
		return nil, err
	}
	for i, sl := range sls {
		preps[i].Listing = sl.Encode()
	}
	return preps, nil
}

// listingOf is job.ListingOf for the job of key (computed once by the
// caller, where ListingOf computes it again).
func listingOf(key []byte, spec *job.Spec) *job.Listing {
	kw := append(append(make([]string, 0, len(spec.Keywords)+len(spec.Resources)), spec.Keywords...), spec.Resources...)
	slices.Sort(kw)
	kw = slices.Compact(kw)
	return &job.Listing{Job: key, Project: spec.Project, Created: spec.Created, Keywords: kw}
}

// Submitted is the outcome of submitting one job.
type Submitted struct {
	CID  cid.Cid
	Acks int   // distinct certified nodes whose signed receipts say they store it
	Err  error // nil when Acks >= ReceiptsNeeded(r)

	signers map[string]bool // account keys of the nodes whose receipts verified
}

// ErrTooFewReplicas reports a job that fewer than r nodes acknowledged.
var ErrTooFewReplicas = errors.New("too few replicas acknowledged")

// Submit sends jobs to their closest nodes, which place them on the r
// closest; a job counts as submitted only when r distinct certified nodes
// signed receipts that they store it (the first node's word is not
// enough). Jobs go in batches per closest node; a node that fails, or
// returns fewer than r receipts for a job, is skipped for the job's next
// closest, up to MaxFirstNodes nodes a job. ctx bounds the whole
// submission.
func (p *Project) Submit(ctx context.Context, jobs []*Prepared) []Submitted {
	out := make([]Submitted, len(jobs))
	r := p.a.DHT().Replication()
	p.crawlIfDue(ctx, len(jobs))
	byNode := map[peer.ID][]int{}
	for i, s := range jobs {
		out[i].CID = s.CID() // computed here, before the goroutines use it
		s.Encode()
		first, err := p.firstNode(ctx, s.PlaceKey())
		if err != nil {
			out[i].Err = fmt.Errorf("job %s: find its closest node: %w", out[i].CID, err)
			continue
		}
		byNode[first] = append(byNode[first], i)
	}
	var wg sync.WaitGroup
	for n, idx := range byNode {
		for len(idx) > 0 {
			cut, size := 0, 0
			for cut < len(idx) && cut < wire.MaxJobsPerStore && size < 4<<20 {
				size += len(jobs[idx[cut]].Spec) + 64
				cut++
			}
			part := idx[:cut]
			idx = idx[cut:]
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.submitBatch(ctx, n, jobs, part, out, nil)
			}()
		}
	}
	wg.Wait()
	for i := range out {
		if out[i].Err == nil && out[i].Acks < ReceiptsNeeded(r) {
			out[i].Err = fmt.Errorf("job %s: %d of %d replicas acknowledged (%d needed): %w", out[i].CID, out[i].Acks, r, ReceiptsNeeded(r), ErrTooFewReplicas)
		}
	}
	return out
}

// CrawlMinJobs is the smallest submission that crawls the overlay first
// (when the last crawl is older than CrawlInterval): a crawl costs about
// N/7 near questions for N nodes (145 at 1,024 in the simulator); a job
// sent to a node that is not its closest costs that node a lookup (about
// 20 + 3·log2(N/20) RPCs).
const CrawlMinJobs = 16

// CrawlInterval is how long a crawled view of the overlay serves before a
// large submission crawls again: 10 min.
const CrawlInterval = 10 * time.Minute

// crawlIfDue crawls the overlay before a submission of jobs jobs when it
// is large enough and the last crawl is old. A failed crawl leaves the
// routing table to place the jobs, as without one.
func (p *Project) crawlIfDue(ctx context.Context, jobs int) {
	d := p.a.DHT()
	if p.noCrawl || jobs < CrawlMinJobs || p.a.Now().Sub(d.CrawledAt()) < CrawlInterval {
		return
	}
	if _, err := d.Crawl(dht.WithPurpose(ctx, dht.PurposeCrawl)); err != nil {
		p.a.Logger().Debug("crawl before submitting", "err", err)
	}
}

// SetCrawl turns crawling before large submissions on (the default) or off.
func (p *Project) SetCrawl(on bool) { p.noCrawl = !on }

// firstNode picks the node a job is sent to: the closest to its place
// key the project knows of, from its routing table and its crawled view
// of the overlay (the node places the job on the true r closest, looking
// the place up itself if it is not among them), else the result of a
// lookup. A batch's jobs share their place, so they go to one node.
func (p *Project) firstNode(ctx context.Context, place []byte) (peer.ID, error) {
	d := p.a.DHT()
	for _, n := range d.NearestKnown(keyspace.KeyPos(place), 4) {
		if !d.IsMarkedDead(n) {
			return n, nil
		}
	}
	closest, err := d.ClosestPeers(dht.WithPurpose(ctx, dht.PurposeSubmit), place)
	if err != nil || len(closest) == 0 {
		return "", orNoPeers(err)
	}
	return closest[0], nil
}

func orNoPeers(err error) error {
	if err == nil {
		return errors.New("no nodes known")
	}
	return err
}

// ReceiptsNeeded is how many distinct certified nodes' signed store
// receipts make a job submitted at replication r: r − f, f =
// claim.Faults(r) (4 of 5). Up to f of a job's replicas may be faulty —
// one that drops jobs signs nothing — so demanding all r would let one of
// them block every submission of its jobs; r − f ≥ 2f + 1 signers hold at
// least f + 1 honest copies, and honest holders republish the job to its
// r closest. It is claim.ReceiptsNeeded, the rule the simulator uses too.
func ReceiptsNeeded(r int) int { return claim.ReceiptsNeeded(r) }

// MaxFirstNodes is how many nodes a job is sent through before its
// submission is given up: replica.MaxFirstNodes, the bound the simulator
// uses too.
const MaxFirstNodes = replica.MaxFirstNodes

// submitBatch stores jobs[idx] through node n, falling back to the next
// closest nodes of each job (not those in tried) when n fails or returns
// fewer than r verified receipts for it.
func (p *Project) submitBatch(ctx context.Context, n peer.ID, jobs []*Prepared, idx []int, out []Submitted, tried []peer.ID) {
	tried = append(slices.Clip(tried), n)
	req := &wire.StoreRequest{Replicate: true, Certs: [][]byte{p.a.Identity().Cert.Raw}}
	for _, i := range idx {
		req.Jobs = append(req.Jobs, wire.JobEnvelope{Signed: jobs[i].Encode(), Listing: jobs[i].Listing})
	}
	var resp wire.StoreResponse
	cctx, cancel := context.WithTimeout(ctx, p.storeTimeout)
	err := p.a.Endpoint().Call(cctx, n, wire.ProtoJobStore, req, wire.MaxJobFrame, &resp)
	cancel()
	if err != nil {
		p.a.DHT().MarkDead(n)
		if ctx.Err() != nil {
			for _, i := range idx {
				out[i].Err = fmt.Errorf("job %s: submit via %s: %w", out[i].CID, n, err)
			}
			return
		}
		// Try each job's next closest live node (a batch's jobs share it).
		errs := make([]error, len(idx))
		for j, i := range idx {
			errs[j] = fmt.Errorf("job %s: submit via %s: %w", out[i].CID, n, err)
		}
		p.resubmit(ctx, jobs, idx, errs, out, tried)
		return
	}
	rerrs := p.countReceipts(&resp, jobs, idx, out)
	r := p.a.DHT().Replication()
	var again []int
	var againErrs []error
	for j, i := range idx {
		if j >= len(resp.Results) {
			out[i].Err = fmt.Errorf("job %s: node %s sent no result for it", out[i].CID, n)
			continue
		}
		res := resp.Results[j]
		if res.Status != wire.StatusOK {
			out[i].Err = fmt.Errorf("job %s refused by %s: %w", out[i].CID, n, &wire.Error{Status: res.Status, Msg: res.Msg})
			continue
		}
		out[i].Acks = len(out[i].signers)
		if out[i].Acks < ReceiptsNeeded(r) {
			why := ""
			if len(rerrs) > 0 {
				why = fmt.Sprintf("; %d receipts refused, first: %v", len(rerrs), rerrs[0])
			}
			err := fmt.Errorf("job %s: %d of %d replicas acknowledged with signed receipts via %s (it reported %d%s): %w", out[i].CID, out[i].Acks, r, n, res.Acks, why, ErrTooFewReplicas)
			again, againErrs = append(again, i), append(againErrs, err)
		}
	}
	p.resubmit(ctx, jobs, again, againErrs, out, tried)
}

// resubmit sends jobs[idx] through each one's next closest live node
// not in tried, those sharing it in one batch, or records errs as their
// outcomes when there is none or they were sent through MaxFirstNodes
// nodes already.
func (p *Project) resubmit(ctx context.Context, jobs []*Prepared, idx []int, errs []error, out []Submitted, tried []peer.ID) {
	for j, i := range idx {
		out[i].Err = errs[j]
	}
	if len(idx) == 0 || len(tried) >= MaxFirstNodes || ctx.Err() != nil {
		return
	}
	next := map[string]peer.ID{} // by place key: one lookup per place
	byNode := map[peer.ID][]int{}
	for _, i := range idx {
		place := string(jobs[i].PlaceKey())
		c, seen := next[place]
		if !seen {
			c = p.nextFirstNode(ctx, jobs[i].PlaceKey(), tried)
			next[place] = c
		}
		if c != "" {
			out[i].Err = nil
			byNode[c] = append(byNode[c], i)
		}
	}
	for c, group := range byNode {
		p.submitBatch(ctx, c, jobs, group, out, tried)
	}
}

// nextFirstNode looks place up afresh and returns its closest live node
// not in tried ("" when there is none).
func (p *Project) nextFirstNode(ctx context.Context, place []byte, tried []peer.ID) peer.ID {
	p.a.DHT().Invalidate(place)
	closest, err := p.a.DHT().ClosestPeers(dht.WithPurpose(ctx, dht.PurposeSubmit), place)
	if err != nil {
		return ""
	}
	for _, c := range closest {
		if !slices.Contains(tried, c) && !p.a.DHT().IsMarkedDead(c) {
			return c
		}
	}
	return ""
}
