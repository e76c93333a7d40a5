package wire_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/wire"
)

// signedReplies are n replies of one node signed as a batch and two
// signed alone by another node, as a confirm gathers them.
func signedReplies(t testing.TB, n int) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() ed25519.PrivateKey {
		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		return ed25519.NewKeyFromSeed(seed)
	}
	a, b := key(), key()
	client := make([]byte, ed25519.PublicKeySize)
	sts := make([]claim.Statement, n)
	for i := range sts {
		sts[i] = claim.Statement{Kind: claim.Granted, Job: []byte(fmt.Sprintf("job-%02d-%s", i, bytes.Repeat([]byte{'k'}, 26))), Client: client, Node: []byte("node-a"), At: 1000 + int64(i)}
	}
	certA, posA := bytes.Repeat([]byte{0xca}, 350), bytes.Repeat([]byte{0xa0}, 150)
	replies, err := claim.SignBatch(sts, certA, posA, func(m []byte) ([]byte, error) { return ed25519.Sign(a, m), nil })
	if err != nil {
		t.Fatal(err)
	}
	certB, posB := bytes.Repeat([]byte{0xcb}, 340), bytes.Repeat([]byte{0xb0}, 140)
	for i := range 2 {
		st := claim.Statement{Kind: claim.Denied, Job: sts[i].Job, Client: client, Node: []byte("node-b"), At: 5}
		r, err := claim.Sign(st, certB, posB, func(m []byte) ([]byte, error) { return ed25519.Sign(b, m), nil })
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, r)
	}
	return replies
}

// TestSharedRepliesRoundTrip: replies shared, encoded, decoded and
// expanded are the replies, byte for byte, and each still decodes and
// verifies as a claim reply; a batch's shared parts are written once.
func TestSharedRepliesRoundTrip(t *testing.T) {
	replies := signedReplies(t, 8)
	shared, err := wire.ShareReplies(replies)
	if err != nil {
		t.Fatal(err)
	}
	if len(shared.Signers) != 3 { // the batch's one signature, and each reply signed alone
		t.Fatalf("%d signers, want 3", len(shared.Signers))
	}
	b, err := wire.Marshal(&shared)
	if err != nil {
		t.Fatal(err)
	}
	var back wire.SharedReplies
	if err := wire.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := back.Expand()
	if err != nil {
		t.Fatal(err)
	}
	plain := 0
	for i := range replies {
		plain += len(replies[i])
		if !bytes.Equal(got[i], replies[i]) {
			t.Fatalf("reply %d rebuilt differently", i)
		}
		if _, _, err := claim.Decode(got[i]); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	t.Logf("%d replies: %d bytes plain, %d shared", len(replies), plain, len(b))
	if len(b) > plain/2 {
		t.Fatalf("shared replies %d bytes, plain %d: want under half", len(b), plain)
	}
}

// TestShareRefusesOtherLayouts: a reply not in a signed reply's
// canonical layout is not shared (the caller sends it the first way).
func TestShareRefusesOtherLayouts(t *testing.T) {
	replies := signedReplies(t, 2)
	for name, bad := range map[string][]byte{
		"not an array":        {0x41, 0x00},
		"three fields":        {0x83, 0x41, 1, 0x41, 2, 0x41, 3},
		"long-form head":      append([]byte{0x84, 0x58, 0x01, 1}, replies[0][2:]...),
		"empty batch path":    {0x85, 0x41, 1, 0x41, 2, 0x41, 3, 0x41, 4, 0x40},
		"trailing bytes":      append(bytes.Clone(replies[0]), 0),
		"a text string in it": {0x84, 0x61, 'a', 0x41, 2, 0x41, 3, 0x41, 4},
	} {
		if _, err := wire.ShareReplies([][]byte{replies[1], bad}); err == nil {
			t.Errorf("%s: shared", name)
		}
	}
}

// TestSharedRepliesBounds: what a decoded message may not say.
func TestSharedRepliesBounds(t *testing.T) {
	good := func() wire.SharedReplies {
		s, err := wire.ShareReplies(signedReplies(t, 3))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name string
		bend func(*wire.SharedReplies)
	}{
		{"signer out of range", func(s *wire.SharedReplies) { s.Replies[0].Signer = uint16(len(s.Signers)) }},
		{"signer named by none", func(s *wire.SharedReplies) { s.Signers = append(s.Signers, s.Signers[0]) }},
		{"empty statement", func(s *wire.SharedReplies) { s.Replies[1].Statement = nil }},
		{"empty certificate", func(s *wire.SharedReplies) { s.Signers[0].Cert = nil }},
		{"empty signature", func(s *wire.SharedReplies) { s.Signers[0].PeerSig = nil }},
		{"statement over bound", func(s *wire.SharedReplies) { s.Replies[0].Statement = make([]byte, wire.MaxReplyBytes+1) }},
		{"too many replies", func(s *wire.SharedReplies) {
			s.Replies = make([]wire.SharedReply, wire.MaxSharedReplies+1)
			for i := range s.Replies {
				s.Replies[i] = wire.SharedReply{Statement: []byte{1}}
			}
		}},
	} {
		s := good()
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: the unbent replies: %v", c.name, err)
		}
		c.bend(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: valid", c.name)
		}
	}
	// A rebuilt reply over a reply's bound is refused by Expand.
	s := good()
	s.Signers[0].Cert = make([]byte, wire.MaxReplyBytes-10)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expand(); err == nil {
		t.Error("a reply over its bound rebuilt")
	}
}

// TestManySharedMessages: each many-job message shared and back is the
// message; counts that do not add up are refused.
func TestManySharedMessages(t *testing.T) {
	replies := signedReplies(t, 4)
	key := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, 36) }
	confirm := &wire.ConfirmManyRequest{Items: []wire.ConfirmRequest{
		{Job: key(0), Start: 7, Replies: replies[:3]}, {Job: key(1), Start: 8, Replies: replies[3:]},
	}}
	sc, err := wire.ShareConfirmManyRequest(confirm)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, sc)
	back, err := sc.Unshared()
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Items) != 2 || len(back.Items[0].Replies) != 3 || !bytes.Equal(back.Items[1].Replies[2], replies[5]) || back.Items[1].Start != 8 {
		t.Fatalf("confirm rebuilt as %+v", back)
	}
	sc.Items[0].Replies++
	if err := sc.Validate(); err == nil {
		t.Error("confirms naming more replies than shared: valid")
	}

	resp := &wire.ConfirmManyResponse{Accepts: [][]byte{replies[0], nil, replies[1]}, Refused: []string{"", "no", ""}}
	sr, err := wire.ShareConfirmManyResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, sr)
	rb, err := sr.Unshared()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rb.Accepts[2], replies[1]) || rb.Accepts[1] != nil || rb.Refused[1] != "no" {
		t.Fatalf("confirm response rebuilt as %+v", rb)
	}
	sr.Refused[1] = ""
	if err := sr.Validate(); err == nil {
		t.Error("three accepted with two acceptances: valid")
	}

	claims := &wire.ClaimManyRequest{Jobs: [][]byte{key(0), key(1)}, Tickets: replies[:2]}
	scl, err := wire.ShareClaimManyRequest(claims)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, scl)
	cb, err := scl.Unshared()
	if err != nil || len(cb.Tickets) != 2 || !bytes.Equal(cb.Tickets[1], replies[1]) {
		t.Fatalf("claim rebuilt as %+v, %v", cb, err)
	}
	noTickets, err := wire.ShareClaimManyRequest(&wire.ClaimManyRequest{Jobs: claims.Jobs})
	if err != nil {
		t.Fatal(err)
	}
	if nb, err := noTickets.Unshared(); err != nil || nb.Tickets != nil {
		t.Fatalf("claim without tickets rebuilt as %+v, %v", nb, err)
	}
	scl.Jobs = scl.Jobs[:1]
	if err := scl.Validate(); err == nil {
		t.Error("one job with two tickets: valid")
	}

	answers := &wire.ClaimManyResponse{Replies: replies[:4]}
	sa, err := wire.ShareClaimManyResponse(answers)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, sa)
	ab, err := sa.Unshared()
	if err != nil || len(ab.Replies) != 4 || !bytes.Equal(ab.Replies[3], replies[3]) {
		t.Fatalf("claim response rebuilt as %+v, %v", ab, err)
	}
}

// TestResultManyShared: a many-result request shared and back is the
// request — each certificate's acceptances and each list of nodes sent
// to, written once — and counts that do not add up are refused.
func TestResultManyShared(t *testing.T) {
	replies := signedReplies(t, 4)
	sent := [][]byte{[]byte("node-a"), []byte("node-b")}
	req := &wire.ResultManyRequest{Items: []wire.ResultSubmit{
		{Envelope: []byte{1}, At: 5, Sent: sent, Start: 7, Accepts: replies[:3]},
		{Envelope: []byte{2}, At: 5, Sent: sent},
		{Envelope: []byte{3}, At: 5, Sent: [][]byte{[]byte("node-c")}, Start: 8, Accepts: replies[3:]},
	}}
	shared, err := wire.ShareResultManyRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(shared.Sent) != 2 {
		t.Fatalf("%d lists of nodes, want the 2 distinct", len(shared.Sent))
	}
	roundTrip(t, shared)
	back, err := shared.Unshared()
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Items) != 3 || len(back.Items[0].Accepts) != 3 || back.Items[1].Accepts != nil || back.Items[1].Start != 0 ||
		!bytes.Equal(back.Items[2].Accepts[2], replies[5]) || string(back.Items[2].Sent[0]) != "node-c" || string(back.Items[1].Sent[1]) != "node-b" {
		t.Fatalf("results rebuilt as %+v", back)
	}
	for name, bend := range map[string]func(r *wire.ResultManySharedRequest){
		"more acceptances named than shared": func(r *wire.ResultManySharedRequest) { r.Items[1].Accepts = 1 },
		"node list out of range":             func(r *wire.ResultManySharedRequest) { r.Items[0].Sent = 2 },
		"more lists than results":            func(r *wire.ResultManySharedRequest) { r.Sent = append(r.Sent, nil, nil) },
		"no results":                         func(r *wire.ResultManySharedRequest) { r.Items = nil },
	} {
		r, err := wire.ShareResultManyRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		bend(r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

// roundTrip encodes and decodes m, which must stay valid.
func roundTrip(t *testing.T, m wire.Validator) {
	t.Helper()
	b, err := wire.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Decode(b, m); err != nil {
		t.Fatal(err)
	}
}

// FuzzSharedReplies decodes arbitrary bytes as shared replies: never a
// panic; what validates expands, and its expansion shared again expands
// to the same replies.
func FuzzSharedReplies(f *testing.F) {
	s, err := wire.ShareReplies(signedReplies(f, 3))
	if err != nil {
		f.Fatal(err)
	}
	b, err := wire.Marshal(&s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s wire.SharedReplies
		if wire.Unmarshal(b, &s) != nil || s.Validate() != nil {
			return
		}
		replies, err := s.Expand()
		if err != nil {
			return
		}
		again, err := wire.ShareReplies(replies)
		if err != nil {
			t.Fatalf("expanded replies not shared again: %v", err)
		}
		replies2, err := again.Expand()
		if err != nil {
			t.Fatal(err)
		}
		for i := range replies {
			if !bytes.Equal(replies[i], replies2[i]) {
				t.Fatalf("reply %d differs after sharing again", i)
			}
		}
	})
}
