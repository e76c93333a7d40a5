package claimnet_test

import (
	"slices"
	"testing"
	"time"

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

// TestCertNearRuleKeepsAcceptorsRemoved: kad-dht drops a peer from the
// routing table once its connection drops, so a node that left is no
// longer in the table at all; the certificate's rule still counts it near:
// as one that left within dht.Config.DepartedKeep (dht.NearestSeen), and
// after that (or at a node that never knew it) by its distance to the
// job. The control: the confirm's rule, which judges by the table, counts
// it far at once, and the certificate's counts a far node far.
func TestCertNearRuleKeepsAcceptorsRemoved(t *testing.T) {
	cn := startClaimNet(t, 12, 1, 94)
	key := cn.keys[0]
	pos := keyspace.KeyPos(key)
	all := cn.net.TrueClosest(key, 12)
	judge := cn.net.Node(cn.net.Index(all[0]))
	left := all[2]
	// The node goes (killed, so no later contact adds it back to the
	// table, as a repair's probe of the live node did now and then) and
	// leaves the judge's table (kad-dht evicts only on a failed query).
	if err := cn.net.Kill(cn.net.Index(left)); err != nil {
		t.Fatal(err)
	}
	judge.DHT().Kad().RoutingTable().RemovePeer(left)
	if slices.Contains(judge.DHT().NearestLocal(pos, 12), left) {
		t.Fatal("the removed peer is still in the routing table")
	}
	const up, warmup = 1 << 40, 0
	confirmNear, _ := claimnet.NearRule(judge.DHT(), pos, up, warmup)
	certNear, _ := claimnet.CertNearRule(judge.DHT(), pos, up, warmup)
	if confirmNear(string(left)) {
		t.Error("control: the confirm's rule counts a node gone from the routing table as near")
	}
	if !certNear(string(left)) {
		t.Error("the certificate's rule refuses an acceptor that left the routing table a moment ago")
	}
	// An hour on, the node is forgotten (as by one that restarted since
	// it left): it still counts by its distance to the job, within the
	// farthest of the r + 3 known; the farthest of the 12 does not.
	cn.clock.Advance(time.Hour + time.Minute)
	if slices.Contains(judge.DHT().NearestSeen(pos, 12), left) {
		t.Error("a node that left over an hour ago is still among those seen")
	}
	certNear, _ = claimnet.CertNearRule(judge.DHT(), pos, up, warmup)
	if !certNear(string(left)) {
		t.Error("the certificate's rule refuses an acceptor within the distance of the job's known nearest")
	}
	if certNear(string(all[11])) {
		t.Error("the certificate's rule counts the farthest of 12 nodes as near")
	}
}
