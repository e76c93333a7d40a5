package claimnet_test

import (
	"testing"

	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/dht/keyspace"
)

// TestCertNearRuleKeepsAcceptorsThatLeft: a node that saw one of a job's
// closest nodes fail leaves it out of a confirm's near set (a live
// confirm needs live grants), but still counts it near in a certificate
// checked later (it was live and near when it accepted); a node far from
// the job is near under neither rule.
func TestCertNearRuleKeepsAcceptorsThatLeft(t *testing.T) {
	cn := startClaimNet(t, 12, 1, 93)
	key := cn.keys[0]
	pos := keyspace.KeyPos(key)
	all := cn.net.TrueClosest(key, 12)
	judge := cn.net.Node(cn.net.Index(all[0]))
	left, far := all[1], all[11]
	judge.DHT().MarkDead(left)
	const up, warmup = 1 << 40, 0 // the judge can judge
	confirmNear, _ := claimnet.NearRule(judge.DHT(), pos, up, warmup)
	certNear, need := claimnet.CertNearRule(judge.DHT(), pos, up, warmup)
	if confirmNear(string(left)) {
		t.Error("the confirm's rule counts a node marked dead as near")
	}
	if !certNear(string(left)) {
		t.Error("the certificate's rule refuses an acceptor that has left since")
	}
	for _, p := range all[:5] {
		if !certNear(string(p)) {
			t.Errorf("the certificate's rule refuses %s, one of the job's five closest", p)
		}
	}
	if confirmNear(string(far)) || certNear(string(far)) {
		t.Errorf("the farthest of 12 nodes counts as near (confirm %v, certificate %v)", confirmNear(string(far)), certNear(string(far)))
	}
	if need != 4 {
		t.Errorf("certificate quorum %d, want 4", need)
	}
}
