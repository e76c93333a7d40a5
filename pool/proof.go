package pool

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// proofNS holds the proof of each held job's state ("proof/<key>"), kept
// apart from the job record so records written before proofs still load.
const proofNS = "proof"

// maxProofCache bounds the digests of proofs already checked here.
const maxProofCache = 1 << 14

// ClaimCheck checks the proof of a Claimed state or Ready tombstone of a
// job (the claim protocol's evidence, job.Proof.Claim) before a node
// merges it from another node. Config.ClaimCheck sets it; nil accepts
// every well-formed claim state (the claim protocol's own checks, package
// claimnet, guard what this node grants itself).
type ClaimCheck func(key []byte, st job.State, proof job.Proof) error

// source is who sent a state this node merges: the sender's certificate
// name and peer, the protocol, and the item as it arrived (evidence).
type source struct {
	name  string
	peer  peer.ID
	proto string
}

// refusal is a state not merged because its proof is missing or forged.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// errNoEnvelope reports a finished state whose result envelope this node
// neither holds nor was given: not merged yet, but no evidence of forgery
// either (the copy may be on its way, or lost).
var errNoEnvelope = errors.New("result envelope not held here")

// heldEnvelope returns the result envelope held here for key if its
// digest is want.
func (p *Pool) heldEnvelope(key, want []byte) []byte {
	b, ok := p.Result(key)
	if !ok {
		return nil
	}
	env, err := result.Decode(b)
	if err != nil || !bytes.Equal(env.Digest(), want) {
		return nil
	}
	return b
}

// checkProof checks that proof makes st true for the held job e, before st
// changes the replica here: per phase, a finished state's result envelope
// (envBytes, or the one held here) signed by a certified client, a
// collected state's project signature, a claim's evidence by
// Config.ClaimCheck. Proofs checked once are cached by digest.
func (p *Pool) checkProof(key []byte, e jobInfo, st job.State, proof, envBytes []byte) error {
	if !job.NeedsProof(st) {
		return nil
	}
	sum := proofDigest(key, st, proof)
	p.mu.Lock()
	_, done := p.proven[sum]
	p.mu.Unlock()
	if done && (st.Phase != job.Finished || len(envBytes) > 0 || p.heldEnvelope(key, st.Result) != nil) {
		return nil
	}
	pr, err := job.DecodeProof(proof)
	if err != nil {
		return &refusal{fmt.Errorf("%w: %v", job.ErrForgedProof, err)}
	}
	switch st.Phase {
	case job.Finished:
		err = p.checkFinished(key, st, pr, envBytes)
	case job.Collected:
		err = p.checkCollected(key, e, st, pr)
	default: // Claimed, Ready tombstones
		if p.cfg.ClaimCheck != nil {
			if err = p.cfg.ClaimCheck(key, st, pr); err != nil {
				err = &refusal{err}
			}
		}
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	if len(p.proven) >= maxProofCache {
		clear(p.proven)
	}
	p.proven[sum] = struct{}{}
	p.mu.Unlock()
	return nil
}

func (p *Pool) checkFinished(key []byte, st job.State, pr job.Proof, envBytes []byte) error {
	if len(pr.Cert) == 0 {
		return &refusal{fmt.Errorf("%w: finished without the client's certificate", job.ErrNoProof)}
	}
	if len(envBytes) == 0 {
		if envBytes = p.heldEnvelope(key, st.Result); envBytes == nil {
			return errNoEnvelope
		}
	}
	env, err := result.Decode(envBytes)
	if err != nil {
		return &refusal{fmt.Errorf("%w: result envelope: %v", job.ErrForgedProof, err)}
	}
	if err := env.VerifyOuter(); err != nil {
		return &refusal{fmt.Errorf("%w: %v", job.ErrForgedProof, err)}
	}
	id, err := p.ep.Admission().Verifier().VerifyCert(pr.Cert, p.cfg.Now(), certs.RoleClient)
	if err != nil {
		return &refusal{fmt.Errorf("%w: client certificate: %v", job.ErrForgedProof, err)}
	}
	facts := job.ResultFacts{Job: env.Job, Signer: env.Client, Digest: env.Digest(), CertKey: id.PublicKey}
	if err := job.CheckFinished(key, st, facts); err != nil {
		return &refusal{err}
	}
	return nil
}

func (p *Pool) checkCollected(key []byte, e jobInfo, st job.State, pr job.Proof) error {
	der := pr.Cert
	if len(der) == 0 {
		var ok bool
		if der, ok = p.Cert([]byte(e.certRef)); !ok {
			return fmt.Errorf("job %x: certificate of project %q not held", key, e.project)
		}
	}
	id, err := p.ep.Admission().Verifier().VerifyCert(der, p.cfg.Now(), certs.RoleProject)
	if err != nil {
		return &refusal{fmt.Errorf("%w: project certificate: %v", job.ErrForgedProof, err)}
	}
	if id.Name != e.project {
		return &refusal{fmt.Errorf("%w: collected by project %q, the job is %q's", job.ErrForgedProof, id.Name, e.project)}
	}
	if err := job.CheckCollected(key, st, pr, id.PublicKey); err != nil {
		return &refusal{err}
	}
	return nil
}

// proofDigest identifies a (job, state, proof) checked here.
func proofDigest(key []byte, st job.State, proof []byte) [32]byte {
	b, _ := codec.Marshal(&wire.SyncItem{Key: key, State: st, Proof: proof})
	return sha256.Sum256(b)
}

// jobInfo is what a proof check needs of a held job.
type jobInfo struct {
	certRef, project string
}

// storedProof returns the proof of a held job's state, nil when none.
func (p *Pool) storedProof(key []byte) []byte {
	b, err := p.st.Get(store.Key(proofNS, key))
	if err != nil {
		return nil
	}
	return b
}

// Merge merges a state with its proof (and, for a finished state, its
// result envelope) as if another node had sent it: checked first, and
// refused without valid proof. Tests and tools use it; nodes merge what
// they receive by the same path (applyFrom).
func (p *Pool) Merge(key []byte, st job.State, proof, envelope []byte) (job.State, error) {
	_, v, err := p.applyFrom(key, st, proof, envelope, nil)
	return v, err
}
