package claim

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/up-pool/up/codec"
)

func nodeKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

func testStatement() Statement {
	return Statement{Kind: Granted, Job: []byte("job-key"), Client: clientA, Node: []byte("peer-id"), At: tNow}
}

func mustSignReply(t testing.TB, st Statement, cert []byte, key ed25519.PrivateKey) []byte {
	t.Helper()
	b, err := Sign(st, cert, []byte("position"), func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil })
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameStatement(a, b *Statement) bool {
	return a.Kind == b.Kind && bytes.Equal(a.Job, b.Job) && bytes.Equal(a.Client, b.Client) &&
		bytes.Equal(a.Node, b.Node) && a.At == b.At && a.Start == b.Start && a.Busy == b.Busy
}

// envelope encodes a Signed as is (in its layout), for hand-made replies.
func envelope(t testing.TB, s Signed) []byte {
	t.Helper()
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signRaw signs arbitrary statement bytes the way Sign does.
func signRaw(stmt []byte, key ed25519.PrivateKey) []byte {
	return ed25519.Sign(key, append([]byte(replyDomain), stmt...))
}

func TestSignDecodeVerify(t *testing.T) {
	key := nodeKey(1)
	pub := key.Public().(ed25519.PublicKey)
	for _, kind := range []Kind{Granted, Denied, DontCare} {
		for _, at := range []int64{0, 1, tNow, -5, 1 << 62} {
			st := testStatement()
			st.Kind, st.At = kind, at
			b := mustSignReply(t, st, []byte("cert"), key)
			signed, got, err := Decode(b)
			if err != nil {
				t.Fatalf("%v at %d: %v", kind, at, err)
			}
			if !sameStatement(got, &st) || string(signed.Cert) != "cert" {
				t.Fatalf("round trip: %+v, cert %q; want %+v", got, signed.Cert, st)
			}
			if re, err := got.Encode(); err != nil || !bytes.Equal(re, signed.Statement) {
				t.Fatalf("statement re-encodes differently: %v", err)
			}
			if err := signed.Verify(pub); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if err := signed.Verify(nodeKey(2).Public().(ed25519.PublicKey)); err == nil {
				t.Fatal("Verify accepts another node's key")
			}
		}
	}
}

func TestSignDeterministic(t *testing.T) {
	a := mustSignReply(t, testStatement(), []byte("cert"), nodeKey(1))
	b := mustSignReply(t, testStatement(), []byte("cert"), nodeKey(1))
	if !bytes.Equal(a, b) {
		t.Fatal("signing the same statement twice gives different bytes")
	}
}

func TestVerifyTampered(t *testing.T) {
	key := nodeKey(1)
	pub := key.Public().(ed25519.PublicKey)
	signed, _, err := Decode(mustSignReply(t, testStatement(), []byte("cert"), key))
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]func(st *Statement){
		"kind":   func(st *Statement) { st.Kind = Denied },
		"job":    func(st *Statement) { st.Job = []byte("job-kez") },
		"client": func(st *Statement) { st.Client = clientB },
		"node":   func(st *Statement) { st.Node = []byte("peer-ie") },
		"time":   func(st *Statement) { st.At++ },
	}
	for name, edit := range edits {
		st := testStatement()
		edit(&st)
		stmt, err := st.Encode()
		if err != nil {
			t.Fatal(err)
		}
		b := envelope(t, Signed{Statement: stmt, Cert: signed.Cert, Position: signed.Position, PeerSig: signed.PeerSig})
		s2, _, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s2.Verify(pub); err == nil {
			t.Errorf("tampered %s verifies", name)
		}
	}
	for i := range signed.PeerSig {
		s2 := *signed
		s2.PeerSig = bytes.Clone(signed.PeerSig)
		s2.PeerSig[i] ^= 0x10
		if err := s2.Verify(pub); err == nil {
			t.Fatalf("signature with byte %d flipped verifies", i)
		}
	}
	// The signature is domain-separated: a bare signature over the
	// statement (as some other message would carry) does not verify.
	s2 := *signed
	s2.PeerSig = ed25519.Sign(key, signed.Statement)
	if err := s2.Verify(pub); err == nil {
		t.Error("signature without the domain prefix verifies")
	}
	// The certificate is not covered: swapping it keeps the signature valid
	// (callers check the certificate's key against Node themselves).
	s2 = *signed
	s2.Cert = []byte("other cert")
	if err := s2.Verify(pub); err != nil {
		t.Errorf("cert swap broke the signature: %v", err)
	}
}

func TestDecodeFieldBounds(t *testing.T) {
	key := nodeKey(3)
	tests := []struct {
		name string
		edit func(st *Statement, cert *[]byte)
		ok   bool
	}{
		{"valid", func(*Statement, *[]byte) {}, true},
		{"kind 0", func(st *Statement, _ *[]byte) { st.Kind = 0 }, false},
		{"kind 4", func(st *Statement, _ *[]byte) { st.Kind = 4 }, false},
		{"kind 255", func(st *Statement, _ *[]byte) { st.Kind = 255 }, false},
		{"accepted with start", func(st *Statement, _ *[]byte) { st.Kind, st.Start = Accepted, tNow }, true},
		{"grant naming an ended claim's start", func(st *Statement, _ *[]byte) { st.Start = tNow }, true},
		{"grant with negative start", func(st *Statement, _ *[]byte) { st.Start = -1 }, false},
		{"denial with start", func(st *Statement, _ *[]byte) { st.Kind, st.Start = Denied, tNow }, false},
		{"don't-care with start", func(st *Statement, _ *[]byte) { st.Kind, st.Start = DontCare, tNow }, false},
		{"busy denial", func(st *Statement, _ *[]byte) { st.Kind, st.Busy = Denied, true }, true},
		{"busy grant", func(st *Statement, _ *[]byte) { st.Busy = true }, false},
		{"busy acceptance", func(st *Statement, _ *[]byte) { st.Kind, st.Start, st.Busy = Accepted, tNow, true }, false},
		{"job empty", func(st *Statement, _ *[]byte) { st.Job = nil }, false},
		{"job 1 byte", func(st *Statement, _ *[]byte) { st.Job = []byte{0} }, true},
		{"job at bound", func(st *Statement, _ *[]byte) { st.Job = make([]byte, maxIDLen) }, true},
		{"job too long", func(st *Statement, _ *[]byte) { st.Job = make([]byte, maxIDLen+1) }, false},
		{"client short", func(st *Statement, _ *[]byte) { st.Client = clientA[:31] }, false},
		{"client long", func(st *Statement, _ *[]byte) { st.Client = append(bytes.Clone(clientA), 0) }, false},
		{"client empty", func(st *Statement, _ *[]byte) { st.Client = nil }, false},
		{"node empty", func(st *Statement, _ *[]byte) { st.Node = nil }, false},
		{"node at bound", func(st *Statement, _ *[]byte) { st.Node = make([]byte, maxIDLen) }, true},
		{"node too long", func(st *Statement, _ *[]byte) { st.Node = make([]byte, maxIDLen+1) }, false},
		{"cert empty", func(_ *Statement, cert *[]byte) { *cert = nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, cert := testStatement(), []byte("cert")
			tt.edit(&st, &cert)
			signed, got, err := Decode(mustSignReply(t, st, cert, key))
			if tt.ok {
				if err != nil || !sameStatement(got, &st) {
					t.Fatalf("Decode = %+v, %v", got, err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || signed != nil || got != nil {
				t.Fatalf("Decode = %v, %v, %v; want ErrMalformed and nothing else", signed, got, err)
			}
		})
	}
	good := mustSignReply(t, testStatement(), []byte("cert"), key)
	signed, _, _ := Decode(good)
	// The binding to the named node: position record and peer signature.
	for _, tc := range []struct {
		name          string
		position, sig []byte
		ok            bool
	}{
		{"both", []byte("p"), []byte("s"), true},
		{"at bounds", make([]byte, maxPositionLen), make([]byte, maxPeerSigLen), true},
		{"no position record", nil, []byte("s"), false},
		{"position record too long", make([]byte, maxPositionLen+1), []byte("s"), false},
		{"no peer signature", []byte("p"), nil, false},
		{"peer signature too long", []byte("p"), make([]byte, maxPeerSigLen+1), false},
	} {
		b := envelope(t, Signed{Statement: signed.Statement, Cert: signed.Cert, Position: tc.position, PeerSig: tc.sig})
		if _, _, err := Decode(b); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestDecodeSize(t *testing.T) {
	key := nodeKey(4)
	probe := mustSignReply(t, testStatement(), make([]byte, 1000), key)
	overhead := len(probe) - 1000 // the cert's head stays 3 bytes from 256 to 65535
	for _, extra := range []int{-1, 0, 1, 100} {
		certLen := MaxSignedReply - overhead + extra
		b := mustSignReply(t, testStatement(), make([]byte, certLen), key)
		if len(b) != MaxSignedReply+extra {
			t.Fatalf("made %d bytes, want %d", len(b), MaxSignedReply+extra)
		}
		_, _, err := Decode(b)
		if extra <= 0 && err != nil {
			t.Errorf("%d bytes (bound %d) refused: %v", len(b), MaxSignedReply, err)
		}
		if extra > 0 && !errors.Is(err, ErrMalformed) {
			t.Errorf("%d bytes (bound %d): %v", len(b), MaxSignedReply, err)
		}
	}
	huge := bytes.Repeat([]byte{0xff}, MaxSignedReply+1)
	if _, _, err := Decode(huge); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("oversized garbage: %v", err)
	}
}

func TestDecodeRejectsOtherEncodings(t *testing.T) {
	key := nodeKey(5)
	good := mustSignReply(t, testStatement(), []byte("cert"), key)
	signed, _, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	stmt := signed.Statement
	// withStatement wraps statement bytes, properly signed.
	withStatement := func(b []byte) []byte {
		return envelope(t, Signed{Statement: b, Cert: []byte("cert"), PeerSig: signRaw(b, key)})
	}
	mapStmt, _ := codec.Marshal(map[string]any{"Kind": 1, "Job": []byte("j")})
	twoFields, _ := codec.Marshal(&struct {
		_         struct{} `cbor:",toarray"`
		Statement []byte
		Cert      []byte
	}{Statement: stmt, Cert: []byte("cert")})
	tests := map[string][]byte{
		"empty":              nil,
		"null":               {0xf6},
		"truncated":          good[:len(good)-1],
		"trailing byte":      append(bytes.Clone(good), 0),
		"not an array":       {0x43, 1, 2, 3},
		"two fields":         twoFields,
		"indefinite outer":   append(append([]byte{0x9f}, good[1:]...), 0xff),
		"statement empty":    withStatement(nil),
		"statement a map":    withStatement(mapStmt),
		"statement trailing": withStatement(append(bytes.Clone(stmt), 0)),
		"statement 6 items":  withStatement(append([]byte{0x86}, stmt[1:len(stmt)-1]...)),
		"statement 8 items":  withStatement(append(append([]byte{0x88}, stmt[1:]...), 0)),
		"kind 256":           withStatement(append([]byte{0x87, 0x19, 0x01, 0x00}, stmt[2:]...)),
		"kind negative":      withStatement(append([]byte{0x87, 0x20}, stmt[2:]...)),
		"job a text string":  withStatement(bytes.Replace(stmt, []byte{0x47, 'j'}, []byte{0x67, 'j'}, 1)),
		"time a string":      withStatement(append(bytes.Clone(stmt[:len(stmt)-11]), 0x61, 'x', 0, 0xf4)),
		"time a float":       withStatement(append(bytes.Clone(stmt[:len(stmt)-11]), 0xf9, 0x3c, 0x00, 0, 0xf4)),
		"busy a number":      withStatement(append(bytes.Clone(stmt[:len(stmt)-1]), 1)),
		// Valid CBOR for the same statement, but not its canonical
		// encoding: one statement has one encoding.
		"time widened":         withStatement(append(bytes.Clone(stmt[:len(stmt)-11]), 0x1b, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xf4)),
		"kind widened":         withStatement(append([]byte{0x87, 0x18, 0x01}, stmt[2:]...)),
		"statement indefinite": withStatement(append(append([]byte{0x9f}, stmt[1:]...), 0xff)),
	}
	if stmt[0] != 0x87 || stmt[1] != byte(Granted) || stmt[len(stmt)-11] != 0x1b || stmt[len(stmt)-2] != 0 || stmt[len(stmt)-1] != 0xf4 {
		t.Fatalf("unexpected encoding of the test statement: %x", stmt)
	}
	for name, b := range tests {
		s, st, err := Decode(b)
		if !errors.Is(err, ErrMalformed) || s != nil || st != nil {
			t.Errorf("%s: Decode = %v, %v, %v; want ErrMalformed", name, s, st, err)
		}
	}
}

// TestTicketPlace: a ticket may name its job's place (an eighth element,
// signed with the rest); a statement without one keeps the seven
// elements every statement had; a place in any other kind of statement,
// or a place left empty in the eighth element, is refused.
func TestTicketPlace(t *testing.T) {
	key := nodeKey(1)
	pub := key.Public().(ed25519.PublicKey)
	ticket := testStatement()
	ticket.Kind, ticket.Start, ticket.Place = Ticket, 0, []byte("/up/place/root")
	b := mustSignReply(t, ticket, []byte("cert"), key)
	signed, st, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.Place) != "/up/place/root" || signed.Verify(pub) != nil {
		t.Fatalf("ticket with a place: place %q, verifies %v", st.Place, signed.Verify(pub))
	}
	if signed.Statement[0] != 0x88 {
		t.Errorf("a ticket with a place encodes %#x first, want an array of 8", signed.Statement[0])
	}
	plain := testStatement()
	pb := mustSignReply(t, plain, []byte("cert"), key)
	ps, _, err := Decode(pb)
	if err != nil || ps.Statement[0] != 0x87 {
		t.Fatalf("a statement without a place: %v, first byte %#x, want an array of 7", err, ps.Statement[0])
	}
	granted := testStatement()
	granted.Place = []byte("/up/place/root")
	if _, _, err := Decode(mustSignReply(t, granted, []byte("cert"), key)); !errors.Is(err, ErrMalformed) {
		t.Errorf("a grant naming a place: %v, want ErrMalformed", err)
	}
	// The eight-element layout with an empty place is not canonical.
	empty := testStatement()
	empty.Kind, empty.Start = Ticket, 0
	stmt, err := codec.Marshal(&empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(envelope(t, Signed{Statement: stmt, Cert: []byte("cert"), Position: signed.Position, PeerSig: signed.PeerSig})); !errors.Is(err, ErrMalformed) {
		t.Errorf("an empty place in eight elements: %v, want ErrMalformed", err)
	}
}
