package job

import (
	"fmt"

	"github.com/up-pool/up/codec"
)

// Outputs is a result's output when its spec names output files
// (Spec.Outputs): the application's standard output and the files it
// wrote, in the spec's order; a named file it did not write is left out.
// Its encoding (PackOutputs) is canonical CBOR, so copies that computed
// the same bytes give the same output and validate by equality.
type Outputs struct {
	_      struct{} `cbor:",toarray"`
	Stdout []byte
	Files  []OutputFile
}

// OutputFile is one output file: its name (one of Spec.Outputs) and bytes.
type OutputFile struct {
	_    struct{} `cbor:",toarray"`
	Name string
	Data []byte
}

// PackOutputs encodes stdout and the files named by names (data[i] for
// names[i]; nil: not written) as a result's output.
func PackOutputs(stdout []byte, names []string, data [][]byte) []byte {
	o := Outputs{Stdout: stdout}
	if o.Stdout == nil {
		o.Stdout = []byte{}
	}
	for i, n := range names {
		if i < len(data) && data[i] != nil {
			o.Files = append(o.Files, OutputFile{Name: n, Data: data[i]})
		}
	}
	b, err := codec.Marshal(&o)
	if err != nil {
		panic(err) // byte slices and strings always encode
	}
	return b
}

// UnpackOutputs decodes a result's output packed by PackOutputs for a
// spec naming names: each file must be one of names, in their order, at
// most once. The caller bounds len(b) (a result's size).
func UnpackOutputs(b []byte, names []string) (*Outputs, error) {
	var o Outputs
	if err := codec.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%w: output files: %w", ErrMalformed, err)
	}
	next := 0
	for _, f := range o.Files {
		for next < len(names) && names[next] != f.Name {
			next++
		}
		if next == len(names) {
			return nil, fmt.Errorf("%w: output file %q is not one the spec names, in order", ErrMalformed, truncate(f.Name))
		}
		next++
	}
	return &o, nil
}
