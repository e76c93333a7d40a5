package wire

import "fmt"

// Refusal says why a party refused a hello.
type Refusal uint8

// Refusal reasons. The first four are about the refused party's own
// certificate: no other peer of the same network will admit it either.
const (
	RefusalOther     Refusal = iota // anything else: a malformed hello, a superseded position
	RefusalRevoked                  // its certificate is revoked
	RefusalExpired                  // its certificate expired, or is not valid yet
	RefusalForeignCA                // its certificate is another CA's
	RefusalWrongRole                // its role is not one the refusing party admits
	maxRefusal
)

var refusalNames = [...]string{"refused", "certificate revoked", "certificate expired or not yet valid",
	"certificate of another CA", "role not admitted"}

func (r Refusal) String() string {
	if r < maxRefusal {
		return refusalNames[r]
	}
	return fmt.Sprintf("refusal %d", uint8(r))
}

// AboutSender reports whether the refusal is about the refused party's
// own certificate (revoked, expired, another CA's, wrong role), so that
// trying again, or elsewhere, cannot help.
func (r Refusal) AboutSender() bool { return r >= RefusalRevoked && r < maxRefusal }

// HelloRefusal is the body of an unauthorized reply to a hello: why the
// sender was refused.
type HelloRefusal struct {
	_      struct{} `cbor:",toarray"`
	Code   Refusal
	Reason string // the refusing party's words, at most MaxReplyMsg bytes
}

// Validate bounds a decoded HelloRefusal.
func (h *HelloRefusal) Validate() error {
	if h.Code >= maxRefusal {
		return fmt.Errorf("hello refusal code %d: %w", h.Code, ErrMalformed)
	}
	if len(h.Reason) > MaxReplyMsg {
		return fmt.Errorf("hello refusal reason of %d bytes: %w", len(h.Reason), ErrMalformed)
	}
	return nil
}
