package job

import (
	"fmt"

	"github.com/up-pool/up/codec"
)

// Job lifetimes. A spec carries, under the project's signature, how long
// after its creation the job lives (Spec.Lifetime). Every node judges the
// expiry on its own clock with a margin for disagreeing clocks (thesis
// 3.2.4's T_skew): it refuses and drops an expired job, and remembers a
// collected job's deleted key until the job expires, so no replica, however
// long it was down, brings a collected job back.
const (
	// DefaultLifetimeMS is the lifetime of a spec that names none (version
	// 1 specs, or Lifetime 0): 30 days from creation.
	DefaultLifetimeMS = 30 * 24 * 3600 * 1000
	// MaxLifetimeMS bounds a spec's lifetime, and with it how long a node
	// must remember a deleted job: 366 days.
	MaxLifetimeMS = 366 * 24 * 3600 * 1000
	// SkewMS is the most one machine's clock may be off the true time
	// (the trust model's ±10 min).
	SkewMS = 10 * 60 * 1000
	// ExpiryMarginMS is how long past a job's expiry, on its own clock, a
	// node still holds the job: the project's clock (which set Created) and
	// the node's may each be SkewMS off, in opposite directions.
	ExpiryMarginMS = 2 * SkewMS
)

// lifetimeOf is a spec's lifetime in ms, the default where it names none.
func lifetimeOf(s *Spec) int64 {
	if s.Lifetime == 0 {
		return DefaultLifetimeMS
	}
	return s.Lifetime
}

// Expires is when the job expires, in Unix ms on the project's clock:
// creation + lifetime. It saturates instead of overflowing.
func (s *Spec) Expires() int64 {
	return satAdd(s.Created, lifetimeOf(s))
}

// Expired reports whether a job expiring at expires (Spec.Expires) is
// expired at now, read from the judging node's own clock: once now passes
// the expiry by ExpiryMarginMS. A node whose clock is SkewMS fast thus
// never drops a job before the project's clock reaches its expiry, and one
// whose clock is SkewMS slow drops it at most ExpiryMarginMS + 2·SkewMS
// after.
func Expired(expires, now int64) bool {
	return now >= KeepUntil(expires)
}

// KeepUntil is the time, on a node's own clock, from which the node
// refuses a job expiring at expires; until then it holds the job, or
// remembers the key of it if it deleted it collected.
func KeepUntil(expires int64) int64 { return satAdd(expires, ExpiryMarginMS) }

func satAdd(a, b int64) int64 {
	if b > 0 && a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}

// specFields is Spec without its methods: the version 2 layout.
type specFields Spec

// specV1 is the version 1 layout: a Spec without Lifetime.
type specV1 struct {
	_         struct{} `cbor:",toarray"`
	Version   uint16
	Project   string
	App       string
	Args      []string
	Inputs    []Input
	Keywords  []string
	Resources []string
	TFinish   int64
	Created   int64
	Nonce     []byte
	CertRef   []byte
	ResultKey []byte
}

// CBOR array headers of the two layouts (12 and 13 elements).
const (
	specV1Header = 0x80 + 12
	specV2Header = 0x80 + 13
)

// MarshalCBOR encodes a spec in its version's layout: version 1 specs, which
// have no lifetime, keep the bytes (and so the CIDs) they were signed with.
func (s Spec) MarshalCBOR() ([]byte, error) {
	if s.Version != specVersion1 {
		return codec.Marshal((*specFields)(&s))
	}
	if s.Lifetime != 0 {
		return nil, fmt.Errorf("%w: version 1 spec with a lifetime", ErrMalformed)
	}
	return codec.Marshal(&specV1{Version: s.Version, Project: s.Project, App: s.App, Args: s.Args, Inputs: s.Inputs,
		Keywords: s.Keywords, Resources: s.Resources, TFinish: s.TFinish, Created: s.Created, Nonce: s.Nonce,
		CertRef: s.CertRef, ResultKey: s.ResultKey})
}

// UnmarshalCBOR decodes either layout, refusing one that does not match
// the version it carries.
func (s *Spec) UnmarshalCBOR(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty spec", ErrMalformed)
	}
	switch b[0] {
	case specV2Header:
		var f specFields
		if err := codec.Unmarshal(b, &f); err != nil {
			return err
		}
		if f.Version == specVersion1 {
			return fmt.Errorf("%w: version 1 spec in the version %d layout", ErrMalformed, SpecVersion)
		}
		*s = Spec(f)
	case specV1Header:
		var v specV1
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Version != specVersion1 {
			return fmt.Errorf("%w: version %d spec in the version 1 layout", ErrMalformed, v.Version)
		}
		*s = Spec{Version: v.Version, Project: v.Project, App: v.App, Args: v.Args, Inputs: v.Inputs,
			Keywords: v.Keywords, Resources: v.Resources, TFinish: v.TFinish, Created: v.Created, Nonce: v.Nonce,
			CertRef: v.CertRef, ResultKey: v.ResultKey}
	default:
		return fmt.Errorf("%w: spec is not an array of 12 or 13 fields", ErrMalformed)
	}
	return nil
}
