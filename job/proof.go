package job

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/sigverify"
)

// MaxProofSize bounds an encoded Proof: a certificate (16 KiB at most on
// the wire), a signature, and room for the claim protocol's evidence.
const MaxProofSize = 48 << 10

// ErrNoProof reports a replicated state that arrived without the evidence
// that makes it true; ErrForgedProof one whose evidence does not prove it.
var (
	ErrNoProof     = errors.New("state without proof")
	ErrForgedProof = errors.New("state with a forged proof")
)

// Proof is the evidence carried beside a replicated state (thesis 3.2,
// issue 17 "proof-carrying states"). Which fields are set depends on the
// state's phase:
//
//	Finished:  Cert, the certificate (DER) of the client that signed the
//	           result envelope; the envelope itself travels apart (it is
//	           large) and the receiver holds it before it merges
//	Collected: Sig, the project's signature over CollectStatement, or
//	           over a batch's root with the job's inclusion Path
//	           (collectbatch.go); Cert, the project's certificate when it
//	           is not the one the job names (a renewed key)
//	Claimed and Ready tombstones: Claim, the claim protocol's evidence,
//	           opaque here (package claim checks it)
type Proof struct {
	_     struct{} `cbor:",toarray"`
	Sig   []byte
	Cert  []byte
	Claim []byte
	Path  []byte // a collected state's place in a collect batch (BatchPath); empty: none
}

// proofV1 is a proof without a Path, as every proof was encoded before
// collect batches: a proof without one still encodes so (three
// elements), and stored proofs decode.
type proofV1 struct {
	_     struct{} `cbor:",toarray"`
	Sig   []byte
	Cert  []byte
	Claim []byte
}

// proofV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var proofV1Fields = codec.Fields(proofV1{})

// Encode is the proof's canonical encoding; the empty proof encodes to nil.
func (p *Proof) Encode() []byte {
	if len(p.Sig) == 0 && len(p.Cert) == 0 && len(p.Claim) == 0 && len(p.Path) == 0 {
		return nil
	}
	var v any = p
	if len(p.Path) == 0 {
		v = &proofV1{Sig: p.Sig, Cert: p.Cert, Claim: p.Claim}
	}
	b, err := codec.Marshal(v)
	if err != nil {
		panic(err) // byte slices always encode
	}
	return b
}

// DecodeProof parses an encoded proof within MaxProofSize; nil and empty
// bytes are the empty proof.
func DecodeProof(b []byte) (Proof, error) {
	var p Proof
	if len(b) == 0 {
		return p, nil
	}
	if len(b) > MaxProofSize {
		return p, fmt.Errorf("%w: proof of %d bytes (max %d)", ErrMalformed, len(b), MaxProofSize)
	}
	var v1 proofV1
	if codec.ArrayLen(b) == proofV1Fields && codec.Unmarshal(b, &v1) == nil {
		return Proof{Sig: v1.Sig, Cert: v1.Cert, Claim: v1.Claim}, nil
	}
	if err := codec.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%w: proof: %v", ErrMalformed, err)
	}
	if len(p.Path) == 0 {
		return Proof{}, fmt.Errorf("%w: proof with an empty path element", ErrMalformed)
	}
	return p, nil
}

const collectDomain = "up/collected/v1\x00"

// CollectStatement is what a project signs to tell nodes it collected a
// job at (its clock, Unix ms): the job key and the collected state's At.
func CollectStatement(key []byte, at int64) []byte {
	b := append([]byte(collectDomain), byte(len(key)))
	b = append(b, key...)
	return binary.BigEndian.AppendUint64(b, uint64(at))
}

// SignCollected returns the proof of State{Phase: Collected, At: at} for
// job key, signed by the project's key.
func SignCollected(key []byte, at int64, projectKey ed25519.PrivateKey) Proof {
	return Proof{Sig: ed25519.Sign(projectKey, CollectStatement(key, at))}
}

// CheckCollected checks that p proves the collected state st of job key:
// the signature over CollectStatement(key, st.At), or over the root of a
// batch the job's path leads to (CollectedMessage), by projectKey, the
// key of the job's project as the caller verified it (certificate of the
// CA, not revoked, named as the spec's project).
func CheckCollected(key []byte, st State, p Proof, projectKey ed25519.PublicKey) error {
	msg, err := CollectedMessage(key, st, p)
	if err != nil {
		return err
	}
	if len(projectKey) != ed25519.PublicKeySize || !sigverify.Verify(projectKey, msg, p.Sig) {
		return fmt.Errorf("%w: collected at %d: not the project's signature", ErrForgedProof, st.At)
	}
	return nil
}

// ResultFacts is what a verified result envelope says: the job it is for,
// the client key that signed it (outer signature checked), its digest, and
// the key of the client certificate the proof carries (verified by the
// caller against the CA).
type ResultFacts struct {
	Job, Signer, Digest, CertKey []byte
}

// CheckFinished checks that r proves the finished state st of job key:
// the envelope is for this job, its digest is the state's Result, and the
// state's Client signed it with the key of a certified client.
func CheckFinished(key []byte, st State, r ResultFacts) error {
	switch {
	case st.Phase != Finished:
		return fmt.Errorf("%w: %s state checked as finished", ErrMalformed, st.Phase)
	case len(r.Digest) == 0:
		return fmt.Errorf("%w: finished without the result envelope", ErrNoProof)
	case len(r.CertKey) == 0:
		return fmt.Errorf("%w: finished without the client's certificate", ErrNoProof)
	case !bytes.Equal(r.Job, key):
		return fmt.Errorf("%w: result envelope of job %x", ErrForgedProof, r.Job)
	case !bytes.Equal(r.Digest, st.Result):
		return fmt.Errorf("%w: result digest %x, the state names %x", ErrForgedProof, r.Digest, st.Result)
	case !bytes.Equal(r.Signer, st.Client):
		return fmt.Errorf("%w: result signed by %x, the state names client %x", ErrForgedProof, r.Signer, st.Client)
	case !bytes.Equal(r.CertKey, r.Signer):
		return fmt.Errorf("%w: result signer %x is not the certified client %x", ErrForgedProof, r.Signer, r.CertKey)
	}
	return nil
}

// NeedsProof reports whether a state that changes a replica must carry
// proof the receiver checks: every phase but plain Ready{} (a job's first
// state, proven by the project's signed spec).
func NeedsProof(st State) bool {
	return st.Phase != Ready || st.IsTombstone()
}
