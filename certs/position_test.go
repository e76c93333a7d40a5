package certs

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func samplePosition() Position {
	return Position{PeerID: []byte("\x00\x24\x08\x01\x12\x20peer-id-bytes-of-some-node-xyz"), Seq: 7, IssuedAt: t0.Add(1234 * time.Millisecond)}
}

func TestPositionSignVerify(t *testing.T) {
	k := mustKey(t, 40)
	pub := k.Public().(ed25519.PublicKey)
	sp := SignPosition(k, samplePosition())
	if err := sp.Verify(pub); err != nil {
		t.Fatal(err)
	}
	other := mustKey(t, 41).Public().(ed25519.PublicKey)
	if err := sp.Verify(other); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other key: got %v, want ErrBadSignature", err)
	}

	tamper := map[string]func(*SignedPosition){
		"peer ID byte":   func(s *SignedPosition) { s.Position.PeerID[3] ^= 1 },
		"peer ID longer": func(s *SignedPosition) { s.Position.PeerID = append(s.Position.PeerID, 0) },
		"peer ID short":  func(s *SignedPosition) { s.Position.PeerID = s.Position.PeerID[:5] },
		"seq +1":         func(s *SignedPosition) { s.Position.Seq++ },
		"seq high bit":   func(s *SignedPosition) { s.Position.Seq |= 1 << 63 },
		"issued +1ms":    func(s *SignedPosition) { s.Position.IssuedAt = s.Position.IssuedAt.Add(time.Millisecond) },
		"issued -1s":     func(s *SignedPosition) { s.Position.IssuedAt = s.Position.IssuedAt.Add(-time.Second) },
		"sig bit":        func(s *SignedPosition) { s.Sig[10] ^= 0x20 },
		"sig last bit":   func(s *SignedPosition) { s.Sig[63] ^= 0x01 },
	}
	for name, mod := range tamper {
		c := SignedPosition{
			Position: Position{PeerID: bytes.Clone(sp.Position.PeerID), Seq: sp.Position.Seq, IssuedAt: sp.Position.IssuedAt},
			Sig:      bytes.Clone(sp.Sig),
		}
		mod(&c)
		if err := c.Verify(pub); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: got %v, want ErrBadSignature", name, err)
		}
	}
	// Sub-millisecond differences are not part of the statement.
	c := sp
	c.Position.IssuedAt = c.Position.IssuedAt.Add(999 * time.Microsecond)
	if err := c.Verify(pub); err != nil {
		t.Errorf("sub-millisecond change rejected: %v", err)
	}
	for name, c := range map[string]SignedPosition{
		"short sig":     {Position: sp.Position, Sig: sp.Sig[:63]},
		"no sig":        {Position: sp.Position},
		"empty peer ID": {Position: Position{Seq: 1}, Sig: sp.Sig},
		"long peer ID":  {Position: Position{PeerID: make([]byte, MaxPeerIDLen+1)}, Sig: sp.Sig},
	} {
		if err := c.Verify(pub); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	if err := sp.Verify(pub[:31]); !errors.Is(err, ErrMalformed) {
		t.Errorf("short account key: got %v, want ErrMalformed", err)
	}
}

func TestPositionEncoding(t *testing.T) {
	k := mustKey(t, 40)
	p := samplePosition()
	sp := SignPosition(k, p)
	b := sp.Marshal()

	// The exact layout from the spec.
	var want []byte
	want = append(want, "up/position/v1\x00"...)
	want = binary.AppendUvarint(want, uint64(len(p.PeerID)))
	want = append(want, p.PeerID...)
	want = binary.BigEndian.AppendUint64(want, p.Seq)
	want = binary.BigEndian.AppendUint64(want, uint64(p.IssuedAt.UnixMilli()))
	if !ed25519.Verify(k.Public().(ed25519.PublicKey), want, sp.Sig) {
		t.Fatal("signature is not over the specified payload")
	}
	want = append(want, 64)
	want = append(want, sp.Sig...)
	if !bytes.Equal(b, want) {
		t.Fatalf("Marshal:\n got %x\nwant %x", b, want)
	}

	got, err := UnmarshalSignedPosition(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Position.PeerID, p.PeerID) || got.Position.Seq != p.Seq || !got.Position.IssuedAt.Equal(p.IssuedAt) || !bytes.Equal(got.Sig, sp.Sig) {
		t.Fatalf("round trip: %+v", got)
	}
	if err := got.Verify(k.Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Marshal(), b) {
		t.Fatal("re-marshal differs")
	}
	// Decoded slices do not alias the input.
	b[len(positionDomain)+1] ^= 0xff
	if got.Position.PeerID[0] != p.PeerID[0] {
		t.Fatal("PeerID aliases input")
	}
	b[len(positionDomain)+1] ^= 0xff

	bad := map[string][]byte{
		"empty":          nil,
		"trailing byte":  append(bytes.Clone(b), 0),
		"truncated":      b[:len(b)-1],
		"only payload":   b[:len(b)-65],
		"wrong domain":   append([]byte("up/position/v2\x00"), b[len(positionDomain):]...),
		"sig length 63":  append(append(bytes.Clone(b[:len(b)-65]), 63), sp.Sig[:63]...),
		"sig length 65":  append(append(bytes.Clone(b[:len(b)-65]), 65), append(bytes.Clone(sp.Sig), 0)...),
		"non-minimal id": append(append([]byte(positionDomain), byte(len(p.PeerID))|0x80, 0), b[len(positionDomain)+1:]...),
		"zero peer ID":   append(append([]byte(positionDomain), 0), b[len(positionDomain)+1+len(p.PeerID):]...),
		"huge peer ID":   append(append([]byte(positionDomain), 0x81, 0x01), make([]byte, 129+16+65)...),
		"varint overflow": append([]byte(positionDomain),
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, in := range bad {
		if _, err := UnmarshalSignedPosition(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	// 128-byte peer IDs (two-byte length) are fine.
	long := SignPosition(k, Position{PeerID: bytes.Repeat([]byte{7}, MaxPeerIDLen), Seq: 1 << 40, IssuedAt: t0})
	lb := long.Marshal()
	back, err := UnmarshalSignedPosition(lb)
	if err != nil || !bytes.Equal(back.Marshal(), lb) || back.Verify(k.Public().(ed25519.PublicKey)) != nil {
		t.Fatalf("max-length peer ID: %v", err)
	}
}

func TestPositionTimes(t *testing.T) {
	k := mustKey(t, 40)
	pub := k.Public().(ed25519.PublicKey)
	for _, at := range []time.Time{{}, time.Unix(0, 0), t0.In(time.FixedZone("x", 3600)).Add(123456789), time.Unix(-1, 999_999_999)} {
		sp := SignPosition(k, Position{PeerID: []byte{1}, Seq: 1, IssuedAt: at})
		if sp.Position.IssuedAt.UnixMilli() != at.UnixMilli() {
			t.Errorf("%v: signed IssuedAt %v", at, sp.Position.IssuedAt)
		}
		back, err := UnmarshalSignedPosition(sp.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		if !back.Position.IssuedAt.Equal(sp.Position.IssuedAt) {
			t.Errorf("%v: decoded %v, signed %v", at, back.Position.IssuedAt, sp.Position.IssuedAt)
		}
		if err := back.Verify(pub); err != nil {
			t.Errorf("%v: %v", at, err)
		}
	}
}

func TestSupersedes(t *testing.T) {
	a := Position{PeerID: []byte("a"), Seq: 5}
	b := Position{PeerID: []byte("b"), Seq: 4}
	if !a.Supersedes(b) || b.Supersedes(a) {
		t.Error("5 vs 4")
	}
	if a.Supersedes(a) {
		t.Error("a position supersedes itself")
	}
	if !(Position{Seq: 1}).Supersedes(Position{Seq: 0}) || (Position{Seq: 0}).Supersedes(Position{Seq: ^uint64(0)}) {
		t.Error("edge sequence numbers")
	}
}
