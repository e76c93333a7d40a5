package pool

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// proofNS held the proof of each held job's state ("proof/<key>") before
// proofs went into the state record (stateRecord.Proof): read at load,
// deleted with the job's next state.
const proofNS = "proof"

// maxProofCache bounds the digests of proofs already checked here.
const maxProofCache = 1 << 14

// ClaimCheck checks the proof of a Claimed state or Ready tombstone of a
// job placed at pos (its place's position: the acceptors must be near
// it) whose T_finish is tFinish ms (the claim protocol's evidence,
// job.Proof.Claim, and for a release the client's signature in Sig and
// Cert) before a node merges it from another node. Config.ClaimCheck sets
// it (claimnet.ProofChecker in nodes); nil accepts every well-formed claim
// state. With a check set, a node also sends claims only with their proof
// (sendable).
type ClaimCheck func(key []byte, pos keyspace.Pos, tFinish int64, st job.State, proof job.Proof) error

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

// envelopeOf reports whether envBytes is the result envelope of job key
// whose digest is digest: a proof checked before is taken again with the
// sender's envelope only when it is the one the state names (else the
// full check judges it, and refuses a mismatch as forged).
func envelopeOf(key, digest, envBytes []byte) bool {
	if len(envBytes) == 0 {
		return false
	}
	env, err := result.Decode(envBytes)
	return err == nil && bytes.Equal(env.Job, key) && bytes.Equal(env.Digest(), digest)
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
	if done && (st.Phase != job.Finished || envelopeOf(key, st.Result, envBytes) || p.heldEnvelope(key, st.Result) != nil) {
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
			if err = p.cfg.ClaimCheck(key, e.pos, e.tFinish, st, pr); err != nil {
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
	id, err := p.ep.Admission().Verifier().VerifyCert(pr.Cert, p.env.Now(), certs.RoleClient)
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
	id, err := p.ep.Admission().Verifier().VerifyCert(der, p.env.Now(), certs.RoleProject)
	if err != nil {
		return &refusal{fmt.Errorf("%w: project certificate: %v", job.ErrForgedProof, err)}
	}
	if id.Name != e.project {
		return &refusal{fmt.Errorf("%w: collected by project %q, the job is %q's", job.ErrForgedProof, id.Name, e.project)}
	}
	msg, err := job.CollectedMessage(key, st, pr)
	if err != nil {
		return &refusal{err}
	}
	if !p.sigs.Verify(id.PublicKey, msg, pr.Sig) {
		return &refusal{fmt.Errorf("%w: collected at %d: not the project's signature", job.ErrForgedProof, st.At)}
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
	tFinish          int64
	pos              keyspace.Pos
}

// sendable is the state a node sends of a held job and its proof: a
// claim (or tombstone) held without proof — this node saw the confirm but
// not yet the certificate, or a claim that never won — goes out as the
// never-claimed Ready{} when claims are checked (Config.ClaimCheck):
// others would refuse it as a forgery, and their answer, if newer, brings
// the proven claim here.
func (p *Pool) sendable(st job.State, proof []byte) (job.State, []byte) {
	if p.cfg.ClaimCheck != nil && len(proof) == 0 && (st.Phase == job.Claimed || st.IsTombstone()) {
		return job.State{}, nil
	}
	return st, proof
}

// MergeFrom merges a state with its proof that an admitted party (from,
// over protocol proto) sent: as a sync merges it, refused and kept as
// evidence against from when its proof is missing or forged. A proof for
// the very state held here without one is checked and kept (a claim's
// certificate arriving after its confirm). It returns the state as this
// node judges it.
func (p *Pool) MergeFrom(from *overlay.Admitted, proto string, key []byte, st job.State, proof []byte) (job.State, error) {
	src := &source{name: from.Peer.String(), peer: from.Peer, proto: proto}
	if from.Identity != nil {
		src.name = from.Identity.Name
	}
	_, v, err := p.applyFrom(key, st, proof, nil, src)
	return v, err
}

// adoptProof keeps proof for the held state st of key, when st is still
// the state held there without a proof, with the result envelope st
// names (envelope; nil: none) written as storeWrite says.
func (p *Pool) adoptProof(key []byte, st job.State, proof []byte, envelope *storeWrite) (merged, view job.State, err error) {
	now := p.nowMS()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return job.State{}, job.State{}, ErrUnknownJob
	}
	if job.Equal(e.state, st) && len(e.proof) == 0 {
		err = p.persistLocked(key, e, st, proof, envelope)
	} else {
		err = envelope.putAlone(p.st, key, e.state, st.Result)
	}
	return e.state, p.view(e, now), err
}

// Merge merges a state with its proof (and, for a finished state, its
// result envelope) as if another node had sent it: checked first, and
// refused without valid proof. Tests and tools use it; nodes merge what
// they receive by the same path (applyFrom).
func (p *Pool) Merge(key []byte, st job.State, proof, envelope []byte) (job.State, error) {
	_, v, err := p.applyFrom(key, st, proof, envelope, nil)
	return v, err
}

// ApplyProven is Apply for a state this node established itself with the
// proof it keeps and sends with it (a release its client signed, with the
// claim's certificate): proof replaces the held proof when st wins.
func (p *Pool) ApplyProven(key []byte, st job.State, proof []byte) (job.State, error) {
	_, v, err := p.apply(key, st, proof)
	return v, err
}

// Proof returns the proof (job.Proof, encoded) kept with a held job's
// state, nil when none.
func (p *Pool) Proof(key []byte) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.jobs[string(key)]; ok {
		return e.proof
	}
	return nil
}
