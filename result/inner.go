package result

import (
	"fmt"

	"github.com/up-pool/up/codec"
)

// An inner record is a CBOR array of nine fields, or ten when it carries
// a commitment's salt: a result of a job without commit–reveal keeps the
// bytes, and so the signature payload, older clients and projects make.

// innerV1 is the nine-field layout: Inner without Salt.
type innerV1 struct {
	_          struct{} `cbor:",toarray"`
	Job        []byte
	ClientCert []byte
	Output     []byte
	ExitCode   int32
	Error      string
	CPU        int64
	Wall       int64
	At         int64
	Sig        []byte
}

// innerV2 is the ten-field layout, with Salt.
type innerV2 struct {
	_          struct{} `cbor:",toarray"`
	Job        []byte
	ClientCert []byte
	Output     []byte
	ExitCode   int32
	Error      string
	CPU        int64
	Wall       int64
	At         int64
	Sig        []byte
	Salt       []byte
}

// CBOR array headers of the two layouts.
const (
	innerV1Header = 0x80 + 9
	innerV2Header = 0x80 + 10
)

// MarshalCBOR encodes the record in the nine-field layout when it has no
// salt, else in the ten-field one.
func (in Inner) MarshalCBOR() ([]byte, error) {
	v1 := innerV1{Job: in.Job, ClientCert: in.ClientCert, Output: in.Output, ExitCode: in.ExitCode, Error: in.Error,
		CPU: in.CPU, Wall: in.Wall, At: in.At, Sig: in.Sig}
	if len(in.Salt) == 0 {
		return codec.Marshal(&v1)
	}
	return codec.Marshal(&innerV2{Job: v1.Job, ClientCert: v1.ClientCert, Output: v1.Output, ExitCode: v1.ExitCode,
		Error: v1.Error, CPU: v1.CPU, Wall: v1.Wall, At: v1.At, Sig: v1.Sig, Salt: in.Salt})
}

// UnmarshalCBOR decodes either layout; a ten-field record must carry a
// salt of SaltSize bytes (so each record has one encoding).
func (in *Inner) UnmarshalCBOR(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty inner record", ErrMalformed)
	}
	switch b[0] {
	case innerV1Header:
		var v innerV1
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		*in = Inner{Job: v.Job, ClientCert: v.ClientCert, Output: v.Output, ExitCode: v.ExitCode, Error: v.Error,
			CPU: v.CPU, Wall: v.Wall, At: v.At, Sig: v.Sig}
	case innerV2Header:
		var v innerV2
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if len(v.Salt) != SaltSize {
			return fmt.Errorf("%w: inner record with a salt of %d bytes, want %d", ErrMalformed, len(v.Salt), SaltSize)
		}
		*in = Inner{Job: v.Job, ClientCert: v.ClientCert, Output: v.Output, ExitCode: v.ExitCode, Error: v.Error,
			CPU: v.CPU, Wall: v.Wall, At: v.At, Sig: v.Sig, Salt: v.Salt}
	default:
		return fmt.Errorf("%w: inner record is not an array of 9 or 10 fields", ErrMalformed)
	}
	return nil
}
