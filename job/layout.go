package job

import (
	"fmt"

	"github.com/up-pool/up/codec"
)

// A spec's encoding is a CBOR array whose layout its version fixes, so a
// spec keeps the bytes, and the CID, it was signed with: version 1 has 12
// fields, version 2 adds Lifetime (13), version 3 adds Module (14) and
// lays each input out with its Blob (4 fields, where 1 and 2 have 3),
// version 4 adds Stdin and Outputs (16), version 5 Commit and RevealWait
// (18), version 6 Steps (19).

// specFields is Spec without its methods: the version 6 layout.
type specFields Spec

// specV5 is the version 5 layout: a Spec without Steps.
type specV5 struct {
	_          struct{} `cbor:",toarray"`
	Version    uint16
	Project    string
	App        string
	Args       []string
	Inputs     []Input
	Keywords   []string
	Resources  []string
	TFinish    int64
	Created    int64
	Nonce      []byte
	CertRef    []byte
	ResultKey  []byte
	Lifetime   int64
	Module     []byte
	Stdin      uint16
	Outputs    []string
	Commit     uint16
	RevealWait int64
}

// specV4 is the version 4 layout: a Spec without Commit and RevealWait.
type specV4 struct {
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
	Lifetime  int64
	Module    []byte
	Stdin     uint16
	Outputs   []string
}

// specV3 is the version 3 layout: a Spec without Stdin and Outputs.
type specV3 struct {
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
	Lifetime  int64
	Module    []byte
}

// inputV2 is an input as versions 1 and 2 lay it out: without Blob.
type inputV2 struct {
	_      struct{} `cbor:",toarray"`
	URL    string
	SHA256 []byte
	Size   int64
}

// specV2 is the version 2 layout: a Spec without Module, its inputs
// without Blob.
type specV2 struct {
	_         struct{} `cbor:",toarray"`
	Version   uint16
	Project   string
	App       string
	Args      []string
	Inputs    []inputV2
	Keywords  []string
	Resources []string
	TFinish   int64
	Created   int64
	Nonce     []byte
	CertRef   []byte
	ResultKey []byte
	Lifetime  int64
}

// specV1 is the version 1 layout: version 2's without Lifetime.
type specV1 struct {
	_         struct{} `cbor:",toarray"`
	Version   uint16
	Project   string
	App       string
	Args      []string
	Inputs    []inputV2
	Keywords  []string
	Resources []string
	TFinish   int64
	Created   int64
	Nonce     []byte
	CertRef   []byte
	ResultKey []byte
}

// CBOR array headers of the five layouts (12, 13, 14, 16 and 18 elements).
const (
	specV6Header = 0x80 + 19
	specV5Header = 0x80 + 18
	specV1Header = 0x80 + 12
	specV2Header = 0x80 + 13
	specV3Header = 0x80 + 14
	specV4Header = 0x80 + 16
)

// MarshalCBOR encodes a spec in its version's layout: version 1, 2 and 3
// specs keep the bytes (and so the CIDs) they were signed with. Versions
// 4 and 5 keep their layouts; versions above 5 take the version 6 layout
// (Validate refuses the unknown ones).
func (s Spec) MarshalCBOR() ([]byte, error) {
	switch s.Version {
	case specVersion1, specVersion2:
	case specVersion5:
		if s.IsSequence() {
			return nil, fmt.Errorf("%w: version 5 spec with steps", ErrMalformed)
		}
		return codec.Marshal(&specV5{Version: s.Version, Project: s.Project, App: s.App, Args: s.Args, Inputs: s.Inputs,
			Keywords: s.Keywords, Resources: s.Resources, TFinish: s.TFinish, Created: s.Created, Nonce: s.Nonce,
			CertRef: s.CertRef, ResultKey: s.ResultKey, Lifetime: s.Lifetime, Module: s.Module, Stdin: s.Stdin, Outputs: s.Outputs,
			Commit: s.Commit, RevealWait: s.RevealWait})
	case specVersion4:
		if s.UsesCommit() {
			return nil, fmt.Errorf("%w: version 4 spec with commit–reveal", ErrMalformed)
		}
		return codec.Marshal(&specV4{Version: s.Version, Project: s.Project, App: s.App, Args: s.Args, Inputs: s.Inputs,
			Keywords: s.Keywords, Resources: s.Resources, TFinish: s.TFinish, Created: s.Created, Nonce: s.Nonce,
			CertRef: s.CertRef, ResultKey: s.ResultKey, Lifetime: s.Lifetime, Module: s.Module, Stdin: s.Stdin, Outputs: s.Outputs})
	case specVersion3:
		if s.UsesIO() {
			return nil, fmt.Errorf("%w: version 3 spec with standard input or output files", ErrMalformed)
		}
		return codec.Marshal(&specV3{Version: s.Version, Project: s.Project, App: s.App, Args: s.Args, Inputs: s.Inputs,
			Keywords: s.Keywords, Resources: s.Resources, TFinish: s.TFinish, Created: s.Created, Nonce: s.Nonce,
			CertRef: s.CertRef, ResultKey: s.ResultKey, Lifetime: s.Lifetime, Module: s.Module})
	default:
		return codec.Marshal((*specFields)(&s))
	}
	if s.UsesBlobs() {
		return nil, fmt.Errorf("%w: version %d spec with a module or a blob input", ErrMalformed, s.Version)
	}
	v2 := specV2{Version: s.Version, Project: s.Project, App: s.App, Args: s.Args, Inputs: inputsV2(s.Inputs),
		Keywords: s.Keywords, Resources: s.Resources, TFinish: s.TFinish, Created: s.Created, Nonce: s.Nonce,
		CertRef: s.CertRef, ResultKey: s.ResultKey, Lifetime: s.Lifetime}
	if s.Version == specVersion2 {
		return codec.Marshal(&v2)
	}
	if s.Lifetime != 0 {
		return nil, fmt.Errorf("%w: version 1 spec with a lifetime", ErrMalformed)
	}
	return codec.Marshal(&specV1{Version: v2.Version, Project: v2.Project, App: v2.App, Args: v2.Args, Inputs: v2.Inputs,
		Keywords: v2.Keywords, Resources: v2.Resources, TFinish: v2.TFinish, Created: v2.Created, Nonce: v2.Nonce,
		CertRef: v2.CertRef, ResultKey: v2.ResultKey})
}

// UnmarshalCBOR decodes any of the layouts, refusing one that does not
// match the version it carries.
func (s *Spec) UnmarshalCBOR(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty spec", ErrMalformed)
	}
	switch b[0] {
	case specV6Header:
		var f specFields
		if err := codec.Unmarshal(b, &f); err != nil {
			return err
		}
		if f.Version <= specVersion5 {
			return fmt.Errorf("%w: version %d spec in the version %d layout", ErrMalformed, f.Version, specVersion6)
		}
		*s = Spec(f)
	case specV5Header:
		var v specV5
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Version != specVersion5 {
			return fmt.Errorf("%w: version %d spec in the version %d layout", ErrMalformed, v.Version, specVersion5)
		}
		*s = Spec{Version: v.Version, Project: v.Project, App: v.App, Args: v.Args, Inputs: v.Inputs,
			Keywords: v.Keywords, Resources: v.Resources, TFinish: v.TFinish, Created: v.Created, Nonce: v.Nonce,
			CertRef: v.CertRef, ResultKey: v.ResultKey, Lifetime: v.Lifetime, Module: v.Module, Stdin: v.Stdin, Outputs: v.Outputs,
			Commit: v.Commit, RevealWait: v.RevealWait}
	case specV4Header:
		var v specV4
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Version != specVersion4 {
			return fmt.Errorf("%w: version %d spec in the version %d layout", ErrMalformed, v.Version, specVersion4)
		}
		*s = Spec{Version: v.Version, Project: v.Project, App: v.App, Args: v.Args, Inputs: v.Inputs,
			Keywords: v.Keywords, Resources: v.Resources, TFinish: v.TFinish, Created: v.Created, Nonce: v.Nonce,
			CertRef: v.CertRef, ResultKey: v.ResultKey, Lifetime: v.Lifetime, Module: v.Module, Stdin: v.Stdin, Outputs: v.Outputs}
	case specV3Header:
		var v specV3
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Version != specVersion3 {
			return fmt.Errorf("%w: version %d spec in the version %d layout", ErrMalformed, v.Version, specVersion3)
		}
		*s = Spec{Version: v.Version, Project: v.Project, App: v.App, Args: v.Args, Inputs: v.Inputs,
			Keywords: v.Keywords, Resources: v.Resources, TFinish: v.TFinish, Created: v.Created, Nonce: v.Nonce,
			CertRef: v.CertRef, ResultKey: v.ResultKey, Lifetime: v.Lifetime, Module: v.Module}
	case specV2Header:
		var v specV2
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Version != specVersion2 {
			return fmt.Errorf("%w: version %d spec in the version 2 layout", ErrMalformed, v.Version)
		}
		*s = Spec{Version: v.Version, Project: v.Project, App: v.App, Args: v.Args, Inputs: inputsV3(v.Inputs),
			Keywords: v.Keywords, Resources: v.Resources, TFinish: v.TFinish, Created: v.Created, Nonce: v.Nonce,
			CertRef: v.CertRef, ResultKey: v.ResultKey, Lifetime: v.Lifetime}
	case specV1Header:
		var v specV1
		if err := codec.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Version != specVersion1 {
			return fmt.Errorf("%w: version %d spec in the version 1 layout", ErrMalformed, v.Version)
		}
		*s = Spec{Version: v.Version, Project: v.Project, App: v.App, Args: v.Args, Inputs: inputsV3(v.Inputs),
			Keywords: v.Keywords, Resources: v.Resources, TFinish: v.TFinish, Created: v.Created, Nonce: v.Nonce,
			CertRef: v.CertRef, ResultKey: v.ResultKey}
	default:
		return fmt.Errorf("%w: spec is not an array of 12, 13, 14, 16, 18 or 19 fields", ErrMalformed)
	}
	return nil
}

// inputsV2 lays inputs out as versions 1 and 2 do (the caller checked
// that none is a blob); nil stays nil and empty empty, so a decoded spec
// re-encodes to its bytes.
func inputsV2(in []Input) []inputV2 {
	if in == nil {
		return nil
	}
	out := make([]inputV2, len(in))
	for i, x := range in {
		out[i] = inputV2{URL: x.URL, SHA256: x.SHA256, Size: x.Size}
	}
	return out
}

// inputsV3 is inputsV2 undone.
func inputsV3(in []inputV2) []Input {
	if in == nil {
		return nil
	}
	out := make([]Input, len(in))
	for i, x := range in {
		out[i] = Input{URL: x.URL, SHA256: x.SHA256, Size: x.Size}
	}
	return out
}
