package claimnet

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/sigverify"
)

// maxKnownSigs bounds the acceptance signatures a proof checker
// remembers as verified (sigverify.Once): past it, it starts afresh.
const maxKnownSigs = 1 << 14

// ProofChecker checks the proofs of claimed states and tombstones another
// node sends (its Check is a pool.ClaimCheck): the claim's certificate, a
// quorum of acceptances each bound to the node it names and placed among
// the job's closest by the same rule as a confirm's replies, and for a
// release the client's signature under a client certificate of the CA.
// The pool calls it once per (job, state, proof) and caches the verdict.
type ProofChecker struct {
	ep        *overlay.Endpoint
	d         *dht.DHT
	now       func() time.Time
	warmup    int64 // ms
	started   int64 // Unix ms, for claim.CanJudge
	positions *positions
	known     *sigverify.Once // acceptances' signatures verified here (batch roots recur)
}

// NewProofChecker returns the claim proof checker of a node, for its pool
// (deps.Pool and deps.Identity unused); cfg's Warmup applies as for the
// claim service, after the same defaults and validation.
func NewProofChecker(deps Deps, cfg Config) (*ProofChecker, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(false); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	return &ProofChecker{ep: deps.Endpoint, d: deps.DHT, now: deps.Env.Now, warmup: cfg.Warmup.Milliseconds(),
		started: deps.Env.Now().UnixMilli(), positions: newPositions(4096), known: sigverify.NewOnce(maxKnownSigs)}, nil
}

// Check checks that pr proves the claimed state or tombstone st of job
// key, placed at pos (its place's position, pool.ClaimCheck), whose
// T_finish is tFinish ms. Errors wrap job.ErrNoProof or
// job.ErrForgedProof.
func (c *ProofChecker) Check(key []byte, pos keyspace.Pos, tFinish int64, st job.State, pr job.Proof) error {
	accepts, err := claim.DecodeCertificate(pr.Claim)
	if err != nil {
		return fmt.Errorf("%w: %w", job.ErrForgedProof, err)
	}
	now := c.now()
	rel := claim.ReleaseProof{Sig: pr.Sig}
	if len(pr.Cert) > 0 {
		id, err := c.ep.Admission().Verifier().VerifyCert(pr.Cert, now, certs.RoleClient)
		if err != nil {
			return fmt.Errorf("%w: release by client certificate: %w", job.ErrForgedProof, err)
		}
		rel.CertKey = id.PublicKey
	}
	signed := make([]*claim.Signed, len(accepts))
	stmts := make([]claim.Statement, len(accepts))
	for i, b := range accepts {
		s, st, err := claim.Decode(b)
		if err != nil {
			return fmt.Errorf("%w: acceptance %d: %w", job.ErrForgedProof, i, err)
		}
		signed[i], stmts[i] = s, *st
	}
	near, need := certNearRule(c.d, pos, now.UnixMilli()-c.started, c.warmup)
	// The statements first (cheap), the signatures only of a certificate
	// that would prove the state.
	if far := farOf(stmts, near); len(far) > 0 && probeNear(c.d, pos, far) {
		near, need = certNearRule(c.d, pos, now.UnixMilli()-c.started, c.warmup)
	}
	if err := claim.CheckClaimProof(key, st, stmts, rel, need, near, tFinish); err != nil {
		return err
	}
	sigs := newBatch(2 * len(accepts))
	sigs.known = c.known
	accounts := make(map[string]bool, len(signed))
	for i, s := range signed {
		node := peer.ID(stmts[i].Node)
		id, err := c.ep.Admission().Verifier().VerifyCert(s.Cert, now, certs.RoleNode)
		if err != nil {
			return fmt.Errorf("%w: acceptance of node %s: %w", job.ErrForgedProof, node, err)
		}
		// One acceptance per node certificate: the certificate's rule
		// counts acceptors by their distance to the job, so one account's
		// made-up peers must not count more than once (certNearRule).
		if accounts[string(id.PublicKey)] {
			return fmt.Errorf("%w: two acceptances under the certificate of %q", job.ErrForgedProof, id.Name)
		}
		accounts[string(id.PublicKey)] = true
		if err := bindReply(c.positions, i, s, &stmts[i], id.PublicKey, sigs); err != nil {
			return fmt.Errorf("%w: acceptance of node %s signed by %q: %w", job.ErrForgedProof, node, id.Name, err)
		}
	}
	if bad := sigs.verify(); bad >= 0 {
		return fmt.Errorf("%w: acceptance of node %s: %w", job.ErrForgedProof, peer.ID(stmts[bad].Node), claim.ErrBadSignature)
	}
	return nil
}
