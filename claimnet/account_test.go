package claimnet_test

import (
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// TestCertificateOneAccountRefused: the certificate's rule counts an
// acceptor by its distance to the job (a node that never knew it judges a
// certificate made before it joined), so a forger could make up peers
// near the job, their positions signed by its own account, and accept in
// their names. A certificate with two acceptances under one node
// certificate is refused as forged, although the made-up peers are near
// by the distance rule (the control: the rule alone would count them),
// and the honest certificate of the same claim is taken at the same node.
func TestCertificateOneAccountRefused(t *testing.T) {
	cn := startClaimNet(t, 16, 1, 97)
	key := cn.keys[0]
	pos := keyspace.KeyPos(key)
	all := cn.net.TrueClosest(key, 16)
	holders := cn.net.Holders(key)
	// The judge: a replica that takes no part in the claim, so it still
	// holds the job ready.
	judge := cn.net.Node(holders[len(holders)-1])
	deafen(judge, wire.ProtoClaim, wire.ProtoConfirm, wire.ProtoCertify)
	w := cn.winClaim(t, "winner", key)
	honest := cn.net.Node(holders[0]).Pool().Proof(key)
	st, _ := cn.net.Node(holders[0]).Pool().State(key)
	if st.Phase != job.Claimed || len(honest) == 0 {
		t.Fatalf("holder has %v with a proof of %d bytes", st.Phase, len(honest))
	}
	forger := cn.net.Node(cn.net.Index(all[14]))
	const up, warmup = 1 << 40, 0
	near, _ := claimnet.CertNearRule(judge.DHT(), pos, up, warmup)
	id := forger.Identity()
	stmt := claim.Statement{Kind: claim.Accepted, Job: key, Client: st.Client, At: st.Start, Start: st.Start}
	var accepts [][]byte
	for len(accepts) < 4 {
		pk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := peer.IDFromPrivateKey(pk)
		if err != nil {
			t.Fatal(err)
		}
		if !near(string(pid)) {
			continue // ground until the distance rule counts it
		}
		stmt.Node = []byte(pid)
		p := certs.SignPosition(id.Key, certs.Position{PeerID: []byte(pid), Seq: 1, IssuedAt: cn.clock.Now()})
		b, err := claim.Sign(stmt, id.Cert.Raw, p.Marshal(), pk.Sign)
		if err != nil {
			t.Fatal(err)
		}
		accepts = append(accepts, b)
	}
	forged := (&job.Proof{Claim: claim.EncodeCertificate(accepts)}).Encode()
	if jst, _ := judge.Pool().State(key); jst.Phase != job.Ready {
		t.Fatalf("the judge holds %v, want ready", jst.Phase)
	}
	_, err := judge.Pool().Merge(key, st, forged, nil)
	if err == nil || !errors.Is(err, job.ErrForgedProof) {
		t.Fatalf("a certificate of one account's made-up peers near the job: %v, want a forged proof", err)
	}
	if _, err := judge.Pool().Merge(key, st, honest, nil); err != nil {
		t.Fatalf("the honest certificate of %s's claim refused: %v", w.a.Identity().Name, err)
	}
	t.Logf("forged: %v", err)
}
