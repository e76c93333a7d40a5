package job

import (
	"crypto/sha256"
	"fmt"
)

// UnitKey names the unit a job is a copy of: a SHA-256 over what the
// copies of a unit share — project, application, arguments, inputs and
// module — and not the nonce, creation time or keywords that set copies
// apart. Clients use it to run at most one copy of a unit, and replicas to
// refuse a client a second copy they can see (claim.Decide). Two units
// with the same project, application, arguments and inputs are one unit
// here: they would compute the same result.
//
// A spec without a module or blob input hashes as before version 3 (its
// inputs' digests only), so copies signed by older and newer projects, or
// judged by older and newer nodes, agree; one with either hashes the
// module's key and each input's digest and blob key as well.
func (s *Spec) UnitKey() []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q", s.Project, s.App, s.Args)
	if !s.UsesBlobs() {
		for _, in := range s.Inputs {
			h.Write(in.SHA256)
		}
		return h.Sum(nil)
	}
	fmt.Fprintf(h, " module %x", s.Module)
	for _, in := range s.Inputs {
		fmt.Fprintf(h, " input %x %x", in.SHA256, in.Blob)
	}
	return h.Sum(nil)
}

// boardDomain separates a unit's board key from every other key hashed.
const boardDomain = "up/unit-board/v1\x00"

// BoardKey is the key of the unit's commitment board: the r nodes closest
// to it keep the signed commitments of the unit's copies (commit–reveal,
// Spec.Commit), so a client can count them before it reveals and the
// project can check each revealed result against its commitment. Every
// copy of a unit names the same board.
func (s *Spec) BoardKey() []byte {
	h := sha256.New()
	h.Write([]byte(boardDomain))
	h.Write(s.UnitKey())
	return h.Sum(nil)
}
