package indexnet

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
)

// errNoCert reports a listing whose project certificate was not sent.
var errNoCert = errors.New("project certificate not sent")

// verifyListing checks a signed listing once: decoded, signed by a valid,
// unrevoked project certificate of the project it names. Verified
// listings are remembered by hash; the certificate's validity and
// revocation are checked on every use.
func (s *Server) verifyListing(b []byte, offered map[string][]byte, now time.Time) (*job.Listing, error) {
	h := sha256.Sum256(b)
	s.mu.Lock()
	cached, ok := s.verified[h]
	var known certs.Identity
	if ok {
		known, ok = s.certs[cached.l.Project]
	}
	s.mu.Unlock()
	v := s.ep.Admission().Verifier()
	if ok && !v.IsRevoked(known.Serial) && now.Before(known.NotAfter) {
		s.mu.Lock()
		if c, still := s.verified[h]; still {
			c.used = now.UnixMilli() // written again: kept another entry expiry
			s.verified[h] = c
		}
		s.mu.Unlock()
		return cached.l, nil
	}
	signed, l, err := job.DecodeListing(b)
	if err != nil {
		return nil, err
	}
	var id *certs.Identity
	for _, der := range offered {
		c, err := x509.ParseCertificate(der)
		if err != nil || c.Subject.CommonName != l.Project {
			continue
		}
		if id, err = v.VerifyCert(der, now, certs.RoleProject); err != nil {
			return nil, fmt.Errorf("certificate of project %q: %w", l.Project, err)
		}
		break
	}
	if id == nil {
		s.mu.Lock()
		known, ok := s.certs[l.Project]
		s.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("listing of project %q: %w", l.Project, errNoCert)
		}
		cand, err := v.VerifyCert(known.Cert.Raw, now, certs.RoleProject)
		if err != nil {
			return nil, fmt.Errorf("project certificate: %w", err)
		}
		id = cand
	}
	if err := signed.VerifyOnce(id.PublicKey, s.sigs); err != nil {
		return nil, fmt.Errorf("listing of project %q: %w", l.Project, err)
	}
	s.mu.Lock()
	if len(s.verified) >= s.cfg.VerifiedCache {
		for k := range s.verified { // evict an arbitrary eighth
			delete(s.verified, k)
			if len(s.verified) < s.cfg.VerifiedCache*7/8 {
				break
			}
		}
	}
	s.verified[h] = verifiedListing{l: l, used: now.UnixMilli()}
	s.certs[l.Project] = *id
	s.mu.Unlock()
	return l, nil
}
