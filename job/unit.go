package job

import (
	"crypto/sha256"
	"fmt"
)

// UnitKey names the unit a job is a copy of: a SHA-256 over what the
// copies of a unit share — project, application, arguments and input
// digests — and not the nonce, creation time or keywords that set copies
// apart. Clients use it to run at most one copy of a unit, and replicas to
// refuse a client a second copy they can see (claim.Decide). Two units
// with the same project, application, arguments and inputs are one unit
// here: they would compute the same result.
func (s *Spec) UnitKey() []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q", s.Project, s.App, s.Args)
	for _, in := range s.Inputs {
		h.Write(in.SHA256)
	}
	return h.Sum(nil)
}
