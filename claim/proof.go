package claim

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/sigverify"
)

// MaxAcceptances bounds the acceptances in a claim certificate (as many
// as a confirm may carry replies).
const MaxAcceptances = 32

// Certificate is a won claim's proof: the signed acceptances (Signed
// replies of kind Accepted) of a quorum of the job's closest nodes, for
// one (job, client, start). The client gathers them from its confirm and
// hands them to the replicas, which keep them with the claimed state
// (job.Proof.Claim) and send them with it in syncs.
type Certificate struct {
	_       struct{} `cbor:",toarray"`
	Accepts [][]byte
}

// EncodeCertificate is the canonical encoding of the acceptances.
func EncodeCertificate(accepts [][]byte) []byte {
	b, err := codec.Marshal(&Certificate{Accepts: accepts})
	if err != nil {
		panic(err) // byte slices always encode
	}
	return b
}

// DecodeCertificate parses a claim certificate within its bounds: 1 to
// MaxAcceptances acceptances of at most MaxSignedReply bytes each. Empty
// bytes decode to no acceptances.
func DecodeCertificate(b []byte) ([][]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) > MaxAcceptances*(MaxSignedReply+8)+16 {
		return nil, fmt.Errorf("%w: certificate of %d bytes", ErrMalformed, len(b))
	}
	var c Certificate
	if err := codec.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: certificate: %v", ErrMalformed, err)
	}
	if len(c.Accepts) == 0 || len(c.Accepts) > MaxAcceptances {
		return nil, fmt.Errorf("%w: certificate of %d acceptances (1 to %d)", ErrMalformed, len(c.Accepts), MaxAcceptances)
	}
	for _, a := range c.Accepts {
		if len(a) == 0 || len(a) > MaxSignedReply {
			return nil, fmt.Errorf("%w: acceptance of %d bytes", ErrMalformed, len(a))
		}
	}
	return c.Accepts, nil
}

const releaseDomain = "up/claim-release/v1\x00"

// ReleaseStatement is what a client signs to give its claim (client,
// start) on job key back.
func ReleaseStatement(key, client []byte, start int64) []byte {
	b := append([]byte(releaseDomain), byte(len(key)))
	b = append(b, key...)
	b = append(b, byte(len(client)))
	b = append(b, client...)
	for i := 56; i >= 0; i -= 8 {
		b = append(b, byte(uint64(start)>>i)) // big-endian
	}
	return b
}

// SignRelease is the client's signature releasing its claim of job key
// that started at start.
func SignRelease(key []byte, start int64, clientKey ed25519.PrivateKey) []byte {
	return ed25519.Sign(clientKey, ReleaseStatement(key, clientKey.Public().(ed25519.PublicKey), start))
}

// ReleaseProof is the evidence that a client gave its claim back: its
// signature over ReleaseStatement, and the public key of the client
// certificate the proof carries as the caller verified it (of the CA,
// valid, not revoked; nil when there is none).
type ReleaseProof struct {
	Sig     []byte
	CertKey ed25519.PublicKey
}

// CheckClaimProof checks that a claim certificate proves the claimed
// state or ready tombstone st of job key, before a node merges st from
// another node. accepts are the certificate's acceptances, decoded, their
// signatures verified and each bound to the node it names by the caller.
// Rules: every acceptance is of kind Accepted for exactly this job, the
// state's client and start; no node accepts twice; at least need of them
// come from nodes near accepts as among the job's closest (others are not
// counted: views differ); a live claim's deadline is its start + tFinish,
// the deadline every confirm gives. A claim with an earlier deadline (a
// release) or a tombstone (the claim ended) also needs rel: the state's
// client signed its release with the key of its certificate. Errors wrap
// job.ErrNoProof (no certificate, no release signature) or
// job.ErrForgedProof.
func CheckClaimProof(key []byte, st job.State, accepts []Statement, rel ReleaseProof, need int,
	near func(node string) bool, tFinish int64) error {
	if st.Phase != job.Claimed && !st.IsTombstone() {
		return fmt.Errorf("%w: %s state checked as a claim", job.ErrMalformed, st.Phase)
	}
	if len(accepts) == 0 {
		return fmt.Errorf("%w: claim (start %d) without its certificate", job.ErrNoProof, st.Start)
	}
	seen := make(map[string]bool, len(accepts))
	counted := 0
	for _, a := range accepts {
		switch {
		case a.Kind != Accepted:
			return fmt.Errorf("%w: a %s reply in a claim certificate", job.ErrForgedProof, a.Kind)
		case !bytes.Equal(a.Job, key) || !bytes.Equal(a.Client, st.Client) || a.Start != st.Start:
			return fmt.Errorf("%w: an acceptance of another claim (start %d, the state's %d)", job.ErrForgedProof, a.Start, st.Start)
		case seen[string(a.Node)]:
			return fmt.Errorf("%w: two acceptances from node %x", job.ErrForgedProof, a.Node)
		}
		seen[string(a.Node)] = true
		if near(string(a.Node)) {
			counted++
		}
	}
	if counted < need || counted == 0 {
		return fmt.Errorf("%w: %d acceptances from the job's closest nodes, need %d", job.ErrForgedProof, counted, need)
	}
	switch {
	case st.Phase == job.Claimed && st.Deadline == st.Start+tFinish:
		return nil // live
	case st.Phase == job.Claimed && st.Deadline > st.Start+tFinish:
		return fmt.Errorf("%w: claim deadline %d past start %d + T_finish %d", job.ErrForgedProof, st.Deadline, st.Start, tFinish)
	case len(rel.Sig) == 0:
		return fmt.Errorf("%w: claim (start %d) ended without its client's release", job.ErrNoProof, st.Start)
	case !bytes.Equal(rel.CertKey, st.Client):
		return fmt.Errorf("%w: release without the certificate of client %x", job.ErrForgedProof, st.Client)
	case !sigverify.Verify(ed25519.PublicKey(st.Client), ReleaseStatement(key, st.Client, st.Start), rel.Sig):
		return fmt.Errorf("%w: release not signed by client %x", job.ErrForgedProof, st.Client)
	}
	return nil
}
