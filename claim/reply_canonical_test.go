package claim

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// FuzzCanonicalReply: whatever the hand-read layouts take, the codec
// takes too, with the same fields, and finds its statement canonically
// encoded; every reply Sign and SignBatch write is taken by them.
func FuzzCanonicalReply(f *testing.F) {
	key := nodeKey(11)
	sign := func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil }
	batch, err := SignBatch(batchStatements(3), []byte("cert"), []byte("position"), sign)
	if err != nil {
		f.Fatal(err)
	}
	ticket := testStatement()
	ticket.Kind, ticket.Place = Ticket, []byte("place")
	neg := testStatement()
	neg.At = -5
	for _, b := range append(batch, mustSignReply(f, testStatement(), []byte("cert"), key), mustSignReply(f, ticket, []byte("c"), key),
		mustSignReply(f, neg, []byte("c"), key)) {
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(bytes.Clone(b), 0))
	}
	base := testStatement()
	stmt, err := base.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(envelope(f, Signed{Statement: append([]byte{stmt[0], 0x18, stmt[1]}, stmt[2:]...), Cert: []byte("c"), Position: []byte("p"), PeerSig: []byte("s")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, st, ok := decodeCanonical(b)
		if !ok {
			return
		}
		ref, err := decodeSigned(b)
		if err != nil {
			t.Fatalf("hand-read reply the codec refuses: %v", err)
		}
		if !bytes.Equal(ref.Statement, s.Statement) || !bytes.Equal(ref.Cert, s.Cert) || !bytes.Equal(ref.Position, s.Position) ||
			!bytes.Equal(ref.PeerSig, s.PeerSig) || !bytes.Equal(ref.Path, s.Path) {
			t.Fatalf("signed reply read differently:\nhand  %+v\ncodec %+v", s, ref)
		}
		refSt, err := decodeStatement(s.Statement)
		if err != nil {
			t.Fatalf("hand-read statement the codec refuses: %v", err)
		}
		if !sameStatement(&st, &refSt) || !bytes.Equal(st.Place, refSt.Place) {
			t.Fatalf("statement read differently:\nhand  %+v\ncodec %+v", st, refSt)
		}
		if re, err := st.Encode(); err != nil || !bytes.Equal(re, s.Statement) {
			t.Fatalf("hand-read statement is not canonical: %v\nin  %x\nout %x", err, s.Statement, re)
		}
	})
}

// TestCanonicalReplyTakesWhatSignWrites: every layout Sign and SignBatch
// write is hand-read; a statement with a longer head than needed is
// not (control: the codec reads it, and Decode then refuses it as not
// canonical).
func TestCanonicalReplyTakesWhatSignWrites(t *testing.T) {
	key := nodeKey(12)
	sign := func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil }
	batch, err := SignBatch(batchStatements(4), []byte("cert"), []byte("position"), sign)
	if err != nil {
		t.Fatal(err)
	}
	ticket := testStatement()
	ticket.Kind, ticket.Place = Ticket, []byte("place")
	for i, b := range append(batch, mustSignReply(t, testStatement(), []byte("cert"), key), mustSignReply(t, ticket, []byte("c"), key)) {
		if _, _, ok := decodeCanonical(b); !ok {
			t.Errorf("reply %d: not hand-read", i)
		}
	}
	base := testStatement()
	stmt, err := base.Encode()
	if err != nil {
		t.Fatal(err)
	}
	wide := append([]byte{stmt[0], 0x18, stmt[1]}, stmt[2:]...)
	b := envelope(t, Signed{Statement: wide, Cert: []byte("c"), Position: []byte("p"), PeerSig: signRaw(wide, key)})
	if _, _, ok := decodeCanonical(b); ok {
		t.Fatal("a statement with a wide head was hand-read")
	}
	if _, err := decodeStatement(wide); err != nil {
		t.Fatalf("control: the codec refuses the wide statement: %v", err)
	}
	if _, _, err := Decode(b); err == nil {
		t.Fatal("Decode took a statement not canonically encoded")
	}
}
