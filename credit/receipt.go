package credit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/sigverify"
)

// Bounds of a receipt, enforced on every decode.
const (
	Version       = 1        // the Receipt version this code reads and writes
	MaxEntries    = 128      // results one receipt credits
	MaxJobLen     = 64       // bytes of an entry's job CID
	MaxReceiptLen = 16 << 10 // bytes of an encoded Receipt
	MaxCertLen    = 16 << 10 // bytes of the project certificate a Signed carries
	MaxSignedLen  = 33 << 10 // bytes of an encoded Signed: receipt, certificate, signature
	MaxAmount     = 1 << 40  // credit one entry may grant
	receiptDomain = "up/credit/v1\x00"
)

// Errors a receipt is rejected with; each wrapped with what failed.
var (
	// ErrMalformed: it does not decode, breaks a bound, or is not
	// canonically encoded.
	ErrMalformed = errors.New("malformed credit receipt")
	// ErrCertificate: its certificate is not a project's issued by the
	// CA, is not the one the receipt names, is of another project, was not
	// valid when the receipt was made, or is revoked.
	ErrCertificate = errors.New("credit receipt certificate refused")
	// ErrBadSignature: the signature is not the certificate's key's over
	// the receipt (forged, or altered after signing).
	ErrBadSignature = errors.New("credit receipt signature does not verify")
	// ErrFuture: the receipt is dated ahead of the verifier's clock by
	// more than the skew margin.
	ErrFuture = errors.New("credit receipt dated in the future")
	// ErrWrongClient: the receipt credits another client than the one
	// asked for.
	ErrWrongClient = errors.New("credit receipt is for another client")
)

// Entry is one valid result a receipt credits.
type Entry struct {
	_      struct{} `cbor:",toarray"`
	Unit   int64    // the unit's number in the project's ledger
	Job    []byte   // the CID (bytes) of the job the client ran
	Amount uint64   // credit granted for it: 1..MaxAmount
	At     int64    // when the project graded it valid, Unix ms on the project's clock
}

// Receipt is a project's signed statement of the credit it granted one
// client: the results newly credited, and the running total.
type Receipt struct {
	_       struct{} `cbor:",toarray"`
	Version uint16
	Project string  // the project's name, as in its certificate
	CertRef []byte  // sha256 of the project certificate's DER (job.CertRef)
	Client  []byte  // the client's Ed25519 public key
	Seq     uint64  // this project's receipts to this client: 1, 2, … in order
	Total   uint64  // credit granted to the client by the project, this receipt's included
	Results uint64  // valid results counted in Total
	Created int64   // when signed, Unix ms on the project's clock
	Entries []Entry // the results this receipt credits: 1..MaxEntries
}

// Validate checks the receipt's bounds and that its own figures agree:
// the total covers its entries, as the result count does.
func (r *Receipt) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	switch {
	case r.Version != Version:
		return bad("version %d, want %d", r.Version, Version)
	case r.Project == "" || len(r.Project) > job.MaxNameLen || !utf8.ValidString(r.Project):
		return bad("project name of %d bytes", len(r.Project))
	case len(r.CertRef) != job.CertRefLen:
		return bad("certificate reference of %d bytes, want %d", len(r.CertRef), job.CertRefLen)
	case len(r.Client) != ed25519.PublicKeySize:
		return bad("client key of %d bytes, want %d", len(r.Client), ed25519.PublicKeySize)
	case r.Seq == 0:
		return bad("sequence number 0")
	case r.Created <= 0:
		return bad("creation time %d", r.Created)
	case len(r.Entries) == 0 || len(r.Entries) > MaxEntries:
		return bad("%d entries, want 1..%d", len(r.Entries), MaxEntries)
	case r.Results < uint64(len(r.Entries)):
		return bad("%d results counted but %d credited here", r.Results, len(r.Entries))
	}
	var sum uint64
	for i, e := range r.Entries {
		switch {
		case len(e.Job) == 0 || len(e.Job) > MaxJobLen:
			return bad("entry %d: job of %d bytes", i, len(e.Job))
		case e.Amount == 0 || e.Amount > MaxAmount:
			return bad("entry %d: amount %d out of 1..%d", i, e.Amount, uint64(MaxAmount))
		}
		sum += e.Amount
	}
	if r.Total < sum {
		return bad("total %d below the %d its entries grant", r.Total, sum)
	}
	return nil
}

// Granted is the credit the receipt's own entries grant.
func (r *Receipt) Granted() uint64 {
	var sum uint64
	for _, e := range r.Entries {
		sum += e.Amount
	}
	return sum
}

// Signed is a receipt's canonical encoding, the project's Ed25519
// signature over it and the project's certificate (DER), so that anyone
// holding the CA's certificate can verify it alone.
type Signed struct {
	_       struct{} `cbor:",toarray"`
	Receipt []byte
	Sig     []byte
	Cert    []byte
}

func payload(receipt []byte) []byte { return append([]byte(receiptDomain), receipt...) }

// Sign encodes r canonically and signs it with the project's key, with
// the project's certificate cert (whose reference r must carry).
func Sign(r *Receipt, key ed25519.PrivateKey, cert []byte) (*Signed, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if !bytes.Equal(job.CertRef(cert), r.CertRef) {
		return nil, fmt.Errorf("%w: sign receipt of project %q: the certificate given is not the one it names", ErrCertificate, r.Project)
	}
	b, err := codec.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxReceiptLen {
		return nil, fmt.Errorf("%w: receipt of %d bytes (max %d)", ErrMalformed, len(b), MaxReceiptLen)
	}
	s := &Signed{Receipt: b, Sig: ed25519.Sign(key, payload(b)), Cert: cert}
	if n := len(s.Encode()); n > MaxSignedLen {
		return nil, fmt.Errorf("%w: signed receipt of %d bytes (max %d)", ErrMalformed, n, MaxSignedLen)
	}
	return s, nil
}

// Encode is the signed receipt's canonical encoding.
func (s *Signed) Encode() []byte {
	b, err := codec.Marshal(s)
	if err != nil {
		panic(err) // three byte strings always encode
	}
	return b
}

// Digest is sha256 of the signed receipt's encoding: what tells two
// copies apart.
func Digest(encoded []byte) [sha256.Size]byte { return sha256.Sum256(encoded) }

// Decode parses an encoded signed receipt and its receipt, checking
// bounds and canonical encodings. It verifies nothing (Verify).
func Decode(b []byte) (*Signed, *Receipt, error) {
	if len(b) > MaxSignedLen {
		return nil, nil, fmt.Errorf("%w: signed receipt of %d bytes (max %d)", ErrMalformed, len(b), MaxSignedLen)
	}
	var s Signed
	if err := codec.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("%w: signed receipt: %v", ErrMalformed, err)
	}
	switch {
	case len(s.Sig) != ed25519.SignatureSize:
		return nil, nil, fmt.Errorf("%w: signature of %d bytes", ErrMalformed, len(s.Sig))
	case len(s.Cert) == 0 || len(s.Cert) > MaxCertLen:
		return nil, nil, fmt.Errorf("%w: certificate of %d bytes (want 1..%d)", ErrMalformed, len(s.Cert), MaxCertLen)
	case len(s.Receipt) > MaxReceiptLen:
		return nil, nil, fmt.Errorf("%w: receipt of %d bytes (max %d)", ErrMalformed, len(s.Receipt), MaxReceiptLen)
	}
	var r Receipt
	if err := codec.Unmarshal(s.Receipt, &r); err != nil {
		return nil, nil, fmt.Errorf("%w: receipt: %v", ErrMalformed, err)
	}
	if err := r.Validate(); err != nil {
		return nil, nil, err
	}
	if re, err := codec.Marshal(&r); err != nil || !bytes.Equal(re, s.Receipt) {
		return nil, nil, fmt.Errorf("%w: receipt not canonically encoded", ErrMalformed)
	}
	if !bytes.Equal(s.Encode(), b) {
		return nil, nil, fmt.Errorf("%w: signed receipt not canonically encoded", ErrMalformed)
	}
	return &s, &r, nil
}

// CertVerifier checks a certificate against the CA and its revocation
// list at a time; *certs.Verifier is one.
type CertVerifier interface {
	VerifyCert(der []byte, now time.Time, roles ...certs.Role) (*certs.Identity, error)
}

// Verify decodes an encoded signed receipt and checks it: its
// certificate is the one it names, a project's issued by the CA, of the
// project it names, valid when the receipt was made (Created, the
// project's clock) and not revoked now; the signature is that key's over
// the receipt; and it is not dated more than job.ExpiryMarginMS ahead of
// now (the verifier's clock).
func Verify(b []byte, v CertVerifier, now time.Time) (*Receipt, error) {
	s, r, err := Decode(b)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(job.CertRef(s.Cert), r.CertRef) {
		return nil, fmt.Errorf("%w: receipt of project %q carries another certificate than the one it names", ErrCertificate, r.Project)
	}
	if r.Created > now.UnixMilli()+job.ExpiryMarginMS {
		return nil, fmt.Errorf("%w: receipt %d of project %q made at %s, ahead of this clock (%s) by more than %s", ErrFuture,
			r.Seq, r.Project, time.UnixMilli(r.Created).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339),
			time.Duration(job.ExpiryMarginMS)*time.Millisecond)
	}
	id, err := v.VerifyCert(s.Cert, time.UnixMilli(r.Created), certs.RoleProject)
	if err != nil {
		return nil, fmt.Errorf("%w: receipt %d of project %q: %w", ErrCertificate, r.Seq, r.Project, err)
	}
	if id.Name != r.Project {
		return nil, fmt.Errorf("%w: receipt names project %q but its certificate is %q's", ErrCertificate, r.Project, id.Name)
	}
	if !sigverify.Verify(id.PublicKey, payload(s.Receipt), s.Sig) {
		return nil, fmt.Errorf("%w: receipt %d of project %q (forged, or altered after signing)", ErrBadSignature, r.Seq, r.Project)
	}
	return r, nil
}

// Key is the overlay key under which a client's receipts are held: its
// r closest nodes store them.
func Key(client ed25519.PublicKey) []byte {
	return append([]byte("up/credit/"), client...)
}
