package result

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"

	"golang.org/x/crypto/nacl/box"
)

// TestSessionSealsMany: the results a session seals open with the
// project's key (Open), each with its own nonce under the one ephemeral
// key and note; a result sealed alone (Seal) opens beside them. Sealing
// costs no public-key operation after the first: the note and key are
// the session's.
func TestSessionSealsMany(t *testing.T) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, client, _ := ed25519.GenerateKey(rand.Reader)
	certKey := func([]byte) (ed25519.PublicKey, error) { return client.Public().(ed25519.PublicKey), nil }
	s, err := NewSession(client, pub[:], rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var head []byte
	nonces := map[string]bool{}
	for i := range 5 {
		in := Inner{Job: []byte(fmt.Sprintf("job %d", i)), ClientCert: []byte("cert"), Output: []byte{byte(i)}, At: int64(i)}
		e, err := s.Seal(in, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		SignOuter(e, client)
		got, err := Open(e, priv, certKey)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if !bytes.Equal(got.Output, in.Output) || !bytes.Equal(got.Job, in.Job) || got.Sig != nil {
			t.Fatalf("result %d opened as %+v", i, got)
		}
		ss, ok := SplitSession(e.Sealed)
		if !ok {
			t.Fatalf("result %d not laid out as a session's", i)
		}
		if h := e.Sealed[:len(sessionMagic)+32+ed25519.SignatureSize]; head == nil {
			head = h
		} else if !bytes.Equal(h, head) {
			t.Fatalf("result %d under another ephemeral key or note", i)
		}
		nonces[string(ss.Nonce)] = true
	}
	if len(nonces) != 5 {
		t.Fatalf("%d nonces, want 5", len(nonces))
	}
	alone, err := Seal(Inner{Job: []byte("job alone"), ClientCert: []byte("cert")}, client, pub[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := SplitSession(alone.Sealed); ok {
		t.Fatal("a result sealed alone is laid out as a session's")
	}
	if _, err := Open(alone, priv, certKey); err != nil {
		t.Fatalf("result sealed alone: %v", err)
	}
}

// FuzzOpenSealed: sealed bytes from the network never panic the opener,
// and bytes that are not a session's or a box's do not open.
func FuzzOpenSealed(f *testing.F) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	_, client, _ := ed25519.GenerateKey(rand.Reader)
	s, err := NewSession(client, pub[:], rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	e, err := s.Seal(Inner{Job: []byte("job")}, rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(e.Sealed)
	f.Add([]byte(sessionMagic))
	f.Add(append([]byte(sessionMagic), make([]byte, SessionOverhead)...))
	f.Fuzz(func(t *testing.T, sealed []byte) {
		env := &Envelope{Job: []byte("job"), Client: client.Public().(ed25519.PublicKey), Sealed: sealed}
		plain, session, ok := OpenSealed(env, priv, pub)
		if ok && session && !bytes.Equal(sealed, e.Sealed) {
			t.Fatalf("altered session bytes opened: %x", plain)
		}
	})
}
