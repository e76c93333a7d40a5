package blobnet

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// Reasons an offer or a chunk is refused: the labels of
// up_blob_refused_total.
const (
	ReasonMalformed     = "malformed"      // a statement, manifest or CID that does not decode
	ReasonCertificate   = "certificate"    // no certificate, not the CA's, revoked, expired, or not the statement's
	ReasonSignature     = "signature"      // the statement's signature is not the project's
	ReasonWrongProject  = "wrong_project"  // a project sending another project's blob
	ReasonWrongManifest = "wrong_manifest" // the manifest is not the one the statement names
	ReasonExpired       = "expired"        // the statement expired on this node's clock
	ReasonWithdrawn     = "withdrawn"      // a statement its project superseded by a later one, the blob since deleted
	ReasonFuture        = "future"         // the statement is dated ahead of this node's clock
	ReasonQuota         = "quota"          // the project is over its quota on this node
	ReasonUnknownBlob   = "unknown_blob"   // a chunk of a blob not offered here
	ReasonUnlisted      = "unlisted_chunk" // a chunk the blob's manifest does not list
	ReasonBadChunk      = "bad_chunk"      // chunk bytes that do not hash to the chunk's CID
)

// refuse counts a refusal by reason and returns it as the reply's error,
// with status.
func (s *Service) refuse(reason string, status wire.Status, format string, args ...any) error {
	s.mRefused.WithLabelValues(reason).Inc()
	s.refMu.Lock()
	s.refused[reason]++
	s.refMu.Unlock()
	return overlay.StatusErr(status, fmt.Errorf(format, args...))
}

// admitOffer checks an offered blob as a job is checked: its statement
// well formed and sent by its own project (or a node), signed by the key
// of the project's certificate — issued by the CA, not revoked, of the
// project the statement names, whose reference the statement carries —
// naming this manifest, and live on this node's clock. It returns the
// admitted blob and the certificate's DER; a refusal is counted.
func (s *Service) admitOffer(from *overlay.Admitted, o *wire.BlobOffer, now time.Time) (*blob.Admitted, []byte, error) {
	_, st, err := blob.DecodeStatement(o.Statement)
	if err != nil {
		return nil, nil, s.refuse(ReasonMalformed, wire.StatusBadRequest, "blob offer: %w", err)
	}
	if from.Role() == certs.RoleProject && from.Identity.Name != st.Project {
		return nil, nil, s.refuse(ReasonWrongProject, wire.StatusUnauthorized,
			"blob offer: project %q may not offer blobs of project %q", from.Identity.Name, st.Project)
	}
	der, err := s.certFor(from, o, st)
	if err != nil {
		return nil, nil, err
	}
	id, err := s.ep.Admission().Verifier().VerifyCert(der, now, certs.RoleProject)
	if err != nil {
		return nil, nil, s.refuse(ReasonCertificate, wire.StatusUnauthorized, "blob offer of project %q: project certificate: %w", st.Project, err)
	}
	if id.Name != st.Project {
		return nil, nil, s.refuse(ReasonCertificate, wire.StatusUnauthorized,
			"blob offer: statement names project %q but its certificate is %q's", st.Project, id.Name)
	}
	adm, err := blob.Admit(o.Statement, o.Manifest, id.PublicKey)
	switch {
	case errors.Is(err, blob.ErrBadSignature):
		return nil, nil, s.refuse(ReasonSignature, wire.StatusUnauthorized,
			"blob offer of project %q: %w (forged, or signed by another key than its certificate's)", st.Project, err)
	case errors.Is(err, blob.ErrWrongManifest):
		return nil, nil, s.refuse(ReasonWrongManifest, wire.StatusBadRequest, "blob offer: %w", err)
	case err != nil:
		return nil, nil, s.refuse(ReasonMalformed, wire.StatusBadRequest, "blob offer: %w", err)
	}
	nowMS := now.UnixMilli()
	if exp := st.Expires(); job.Expired(exp, nowMS) {
		return nil, nil, s.refuse(ReasonExpired, wire.StatusGone, "blob %s: statement expired at %s on its project's clock",
			adm.Key, time.UnixMilli(exp).UTC().Format(time.RFC3339))
	}
	if st.Created > nowMS+job.ExpiryMarginMS {
		return nil, nil, s.refuse(ReasonFuture, wire.StatusBadRequest, "blob %s: statement created at %s, more than %s ahead of this node's clock",
			adm.Key, time.UnixMilli(st.Created).UTC().Format(time.RFC3339), time.Duration(job.ExpiryMarginMS)*time.Millisecond)
	}
	return adm, der, nil
}

// certFor finds the certificate the statement names: the one the offer
// carries, else the sending project's own, else one stored here.
func (s *Service) certFor(from *overlay.Admitted, o *wire.BlobOffer, st *blob.Statement) ([]byte, error) {
	if len(o.Cert) > 0 {
		if !bytes.Equal(job.CertRef(o.Cert), st.CertRef) {
			return nil, s.refuse(ReasonCertificate, wire.StatusUnauthorized,
				"blob offer of project %q: the certificate sent is not the one its statement names", st.Project)
		}
		return o.Cert, nil
	}
	if from.Role() == certs.RoleProject && bytes.Equal(job.CertRef(from.Identity.Cert.Raw), st.CertRef) {
		return from.Identity.Cert.Raw, nil
	}
	s.mu.Lock()
	der, ok := s.certs[string(st.CertRef)]
	s.mu.Unlock()
	if !ok {
		return nil, s.refuse(ReasonCertificate, wire.StatusBadRequest,
			"blob offer of project %q: the certificate its statement names (%x) was not sent", st.Project, st.CertRef[:8])
	}
	return der, nil
}
