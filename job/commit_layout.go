package job

import "github.com/up-pool/up/codec"

// CannotUseCommit reports whether signed, an encoded signed spec, holds a
// spec in the layout of version 1 to 4: those layouts have no
// commit–reveal fields (layout.go), so such a job cannot ask for
// commit–reveal whatever else its bytes hold. False when the layout is
// another or cannot be read this way: decode the spec to know. It reads
// the layout's head only — no decoding, no allocation — for a project
// that must know, of each result it harvests, whether its job uses
// commit–reveal.
func CannotUseCommit(signed []byte) bool {
	var spec, sig, path []byte
	n, ok := codec.ReadByteStringArray(signed, 2, &spec, &sig, &path)
	if !ok || n < 2 || len(spec) == 0 {
		return false
	}
	switch spec[0] {
	case specV1Header, specV2Header, specV3Header, specV4Header:
		return true
	}
	return false
}
