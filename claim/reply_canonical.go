package claim

import (
	"bytes"

	"github.com/up-pool/up/codec"
)

// Hand-read layouts of a signed reply and its statement. A node checks
// several replies per job it confirms, and every replica the claim
// certificate a result carries: the codec's reflective decode and the
// re-encoding that checked a statement's one encoding were 4 % of the
// CPU in `up bench`. These read the one canonical layout (codec's
// readers: shortest heads, byte strings, definite lengths) and so need
// no re-encoding; anything else goes to the codec, which refuses it or
// finds it not canonically encoded. FuzzCanonicalReply holds them to
// the codec.

// parseSigned reads a signed reply in either canonical layout: four byte
// strings, or five with a non-empty path. The fields alias b.
func parseSigned(b []byte) (Signed, bool) {
	var s Signed
	n, ok := codec.ReadByteStringArray(b, 4, &s.Statement, &s.Cert, &s.Position, &s.PeerSig, &s.Path)
	if !ok || (n == 5 && len(s.Path) == 0) {
		return Signed{}, false
	}
	return s, true
}

// parseStatement reads a statement in either canonical layout: seven
// elements, or eight with a non-empty place. The fields alias b.
func parseStatement(b []byte) (Statement, bool) {
	var st Statement
	if len(b) == 0 || (b[0] != 0x87 && b[0] != 0x88) {
		return st, false
	}
	kind, rest, ok := codec.ReadHead(b[1:], 0)
	if !ok || kind > 0xff {
		return Statement{}, false
	}
	st.Kind = Kind(kind)
	for _, f := range []*[]byte{&st.Job, &st.Client, &st.Node} {
		if *f, rest, ok = codec.ReadBytes(rest); !ok {
			return Statement{}, false
		}
	}
	if st.At, rest, ok = codec.ReadInt(rest); !ok {
		return Statement{}, false
	}
	if st.Start, rest, ok = codec.ReadInt(rest); !ok {
		return Statement{}, false
	}
	if st.Busy, rest, ok = codec.ReadBool(rest); !ok {
		return Statement{}, false
	}
	if b[0] == 0x88 {
		if st.Place, rest, ok = codec.ReadBytes(rest); !ok || len(st.Place) == 0 {
			return Statement{}, false
		}
	}
	return st, len(rest) == 0
}

// decodeCanonical is Decode's reading of b in the canonical layouts, its
// fields in one copy of b; ok false: not in them.
func decodeCanonical(b []byte) (Signed, Statement, bool) {
	b = bytes.Clone(b)
	s, ok := parseSigned(b)
	if !ok {
		return Signed{}, Statement{}, false
	}
	st, ok := parseStatement(s.Statement)
	return s, st, ok
}
