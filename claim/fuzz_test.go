package claim

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/up-pool/up/codec"
)

func FuzzDecodeReply(f *testing.F) {
	key := nodeKey(9)
	for _, kind := range []Kind{Granted, Denied, DontCare} {
		st := testStatement()
		st.Kind = kind
		b := mustSignReply(f, st, []byte("cert"), key)
		f.Add(b)
		flipped := bytes.Clone(b)
		flipped[len(flipped)/2] ^= 0x01
		f.Add(flipped)
		f.Add(b[:len(b)-1])
		f.Add(append(bytes.Clone(b), 0))
	}
	// Non-canonical statements (kind and time in wider heads than needed),
	// properly signed: Decode must refuse them.
	stmt, err := codec.Marshal(testStatement())
	if err != nil {
		f.Fatal(err)
	}
	for _, nc := range [][]byte{
		append([]byte{0x85, 0x18, byte(Granted)}, stmt[2:]...),
		append(stmt[:len(stmt)-9:len(stmt)-9], 0x1b, 0, 0, 0, 0, 0, 0, 0, 7),
	} {
		f.Add(envelope(f, Signed{Statement: nc, Cert: []byte("cert"), Position: []byte("p"), PeerSig: signRaw(nc, key)}))
	}
	// The binding fields at and past their bounds.
	good, err := codec.Marshal(testStatement())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(envelope(f, Signed{Statement: good, Cert: []byte("cert"), Position: make([]byte, maxPositionLen), PeerSig: make([]byte, maxPeerSigLen)}))
	f.Add(envelope(f, Signed{Statement: good, Cert: []byte("cert"), Position: make([]byte, maxPositionLen+1), PeerSig: signRaw(good, key)}))
	f.Add(envelope(f, Signed{Statement: good, Cert: []byte("cert"), PeerSig: signRaw(good, key)}))
	// Replies signed in a batch, and one with its path cut short.
	batch, err := SignBatch(batchStatements(5), []byte("cert"), []byte("position"), func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil })
	if err != nil {
		f.Fatal(err)
	}
	f.Add(batch[0])
	f.Add(batch[4])
	f.Add(batch[2][:len(batch[2])-3])
	small := Statement{Kind: DontCare, Job: []byte{1}, Client: clientB, Node: []byte{2}, At: 0}
	f.Add(mustSignReply(f, small, []byte{3}, key))
	f.Add([]byte{})
	f.Add([]byte{0x83, 0x40, 0x40, 0x40})
	f.Add([]byte{0xf6})
	f.Fuzz(func(t *testing.T, b []byte) {
		signed, st, err := Decode(b)
		if err != nil {
			if signed != nil || st != nil {
				t.Fatal("Decode returned values with an error")
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(b) > MaxSignedReply {
			t.Fatalf("accepted %d bytes", len(b))
		}
		re, err := st.Encode()
		if err != nil || !bytes.Equal(re, signed.Statement) {
			t.Fatalf("decoded statement re-encodes differently: %v\nin  %x\nout %x", err, signed.Statement, re)
		}
		if st.Kind < Granted || st.Kind > DontCare || len(st.Job) == 0 || len(st.Job) > maxIDLen ||
			len(st.Client) != ed25519.PublicKeySize || len(st.Node) == 0 || len(st.Node) > maxIDLen ||
			len(signed.Cert) == 0 {
			t.Fatalf("decoded fields out of bounds: %+v", st)
		}
		// The envelope re-encodes (maybe more compactly) to the same reply.
		enc, err := signed.Encode()
		if err != nil {
			t.Fatal(err)
		}
		s2, st2, err := Decode(enc)
		if err != nil || !bytes.Equal(s2.Statement, signed.Statement) || !bytes.Equal(s2.PeerSig, signed.PeerSig) ||
			!bytes.Equal(s2.Cert, signed.Cert) || !bytes.Equal(s2.Path, signed.Path) || !sameStatement(st, st2) {
			t.Fatalf("re-encoded reply decodes differently: %v", err)
		}
		// Fuzzed bytes do not carry this key's signature, but Verify must
		// not panic; a real signature over the statement verifies.
		_ = signed.Verify(key.Public().(ed25519.PublicKey))
		s3 := *signed
		s3.PeerSig, s3.Path = signRaw(signed.Statement, key), nil
		if err := s3.Verify(key.Public().(ed25519.PublicKey)); err != nil {
			t.Fatalf("re-signed statement does not verify: %v", err)
		}
	})
}
