package claimnet_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/wire"
)

// TestConfirmOwnReplyAltered: a node does not verify again the reply it
// signed itself when a confirm carries it back byte for byte, but a copy
// of it with another signature, or another statement under its signature,
// is verified and refused.
func TestConfirmOwnReplyAltered(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 57)
	ctx := context.Background()
	key := cn.keys[0]
	a, _ := cn.client(t, "mallory")
	node := cn.net.Node(cn.net.Holders(key)[0]).ID()
	var resp wire.ClaimResponse
	if err := a.Endpoint().Call(ctx, node, wire.ProtoClaim, &wire.ClaimRequest{Job: key}, wire.MaxReplyBytes, &resp); err != nil {
		t.Fatal(err)
	}
	signed, st, err := claim.Decode(resp.Reply)
	if err != nil || st.Kind != claim.Granted {
		t.Fatalf("claim reply %+v: %v", st, err)
	}
	confirm := func(reply []byte) error {
		return a.Endpoint().Call(ctx, node, wire.ProtoConfirm,
			&wire.ConfirmRequest{Job: key, Start: cn.clock.Now().UnixMilli(), Replies: [][]byte{reply}}, 1024, &wire.Ping{})
	}
	reencode := func(s claim.Signed) []byte {
		b, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	badSig := *signed
	badSig.PeerSig = append([]byte(nil), signed.PeerSig...)
	badSig.PeerSig[5] ^= 1
	otherKind := *signed
	otherKind.Statement, err = (&claim.Statement{Kind: claim.DontCare, Job: st.Job, Client: st.Client, Node: st.Node, At: st.At}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"signature": reencode(badSig), "statement": reencode(otherKind)} {
		if err := confirm(b); err == nil || !strings.Contains(err.Error(), claim.ErrBadSignature.Error()) {
			t.Errorf("own reply with another %s: %v, want a bad signature", name, err)
		}
	}
	// The reply as sent passes the signature check; the confirm still
	// fails, for want of the other nodes' replies.
	err = confirm(resp.Reply)
	var werr *wire.Error
	if !errors.As(err, &werr) || strings.Contains(err.Error(), claim.ErrBadSignature.Error()) {
		t.Fatalf("own reply as sent: %v, want a refusal for another reason", err)
	}
}
