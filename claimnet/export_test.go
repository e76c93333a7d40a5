package claimnet

// SetBeforeConfirmApply sets a hook run between a confirm's check and its
// merge, so a test can put a release in that window.
func (s *Service) SetBeforeConfirmApply(f func(key []byte)) { s.beforeConfirmApply = f }

// NearRule and CertNearRule expose the confirm's and the certificate's
// near rules to the package's external tests.
var (
	NearRule     = nearRule
	CertNearRule = certNearRule
)

// WatchCertificates runs one round of the certificate watch now and
// reports how many claims it voided.
func (s *Service) WatchCertificates() int { return s.watchCertificates() }
