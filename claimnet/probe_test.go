package claimnet_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/wire"
)

// TestCertificateAfterProbe: four of a job's five closest nodes go down;
// the job is stored on the next live ones and claimed there (its closest,
// the judge, takes no part: it refuses claims). The judge still counts
// the four that left among the job's nearest (nothing told it they left),
// so the acceptor farthest out is not among its r + 3 nearest: the
// certificate a sync brings is one acceptance short. Before it refuses,
// the judge probes the nodes it takes to be nearest, marks the four that
// do not answer dead, judges again, and takes the claim. Before the probe
// the job's closest refused honest certificates under churn and kept the
// job ready and listed (issue 24). The claim itself needs the same probe
// at the confirming nodes, whose views count the four too (without it
// the confirm was refused: "3 of 4 replies granted by the job's closest
// nodes"). The control is the judge's rule before the probe: the farthest
// acceptors are outside it.
func TestCertificateAfterProbe(t *testing.T) {
	cn := startClaimNet(t, 16, 0, 95)
	ctx := context.Background()
	spec, err := cn.proj.NewSpec("hashchain", nil, []string{"lhc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := cn.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	key := prep.Key()
	pos := keyspace.KeyPos(key)
	all := cn.net.TrueClosest(key, 16)
	ji := cn.net.Index(all[0])
	judge := cn.net.Node(ji)
	deafen(judge, wire.ProtoClaim, wire.ProtoConfirm, wire.ProtoCertify)
	for _, p := range all[1:5] {
		if err := cn.net.Kill(cn.net.Index(p)); err != nil {
			t.Fatal(err)
		}
	}
	// The project stores the job on its live closest (its own lookup;
	// the judge learns nothing of who left).
	if res := cn.proj.Submit(ctx, []*project.Prepared{prep}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	// The judge, the project's first node, marked the four dead when it
	// pushed the job on; those marks lapse after their backoff, and then
	// nothing tells it they are still down (as under churn).
	cn.clock.Advance(time.Minute)
	w := cn.winClaim(t, "winner", key)
	if st := cn.held(t, ji, key); st.Phase != job.Ready {
		t.Fatalf("the judge holds %v before any sync", st.Phase)
	}
	const up, warmup = 1 << 40, 0
	near, _ := claimnet.CertNearRule(judge.DHT(), pos, up, warmup)
	outside := 0
	for _, p := range w.cl.Nodes {
		if !near(string(p)) {
			outside++
		}
	}
	if outside == 0 {
		t.Fatal("control: every acceptor is inside the judge's rule before the probe; the test proves nothing")
	}
	for _, p := range all[5:9] {
		cn.net.Node(cn.net.Index(p)).Pool().RepublishRound(ctx)
	}
	if st := cn.held(t, ji, key); st.Phase != job.Claimed || st.Start != w.cl.Start {
		t.Fatalf("the judge holds %v (start %d) after the syncs, want the winner's claim (start %d); evidence %+v",
			st.Phase, st.Start, w.cl.Start, judge.Pool().Evidence())
	}
	t.Logf("%d of the claim's nodes outside the judge's rule before the probe; claim taken after it", outside)
}

// TestConfirmLearnsUnknownGrantor: one of a job's replicas is unknown to
// the others (it restarted, and no lookup has met it since: it is in no
// routing table of theirs), so its grant comes from a node outside their
// near view. A confirming node dials a named node it does not know; an
// admitted node enters its routing table and is judged like any, so the
// claim is won. Before, every confirm with that grant among the quorum
// was refused ("3 of 4 replies granted by the job's closest nodes"), the
// tail of the 128-node churn run at 30 s lifetimes. The control: before
// the claim, the confirm's rule at each other replica counts it far.
func TestConfirmLearnsUnknownGrantor(t *testing.T) {
	cn := startClaimNet(t, 12, 1, 98)
	key := cn.keys[0]
	pos := keyspace.KeyPos(key)
	holders := cn.net.Holders(key)
	unknown := cn.net.Node(holders[0]).ID()
	const up, warmup = 1 << 40, 0
	for _, nd := range cn.net.Live() {
		if nd.ID() == unknown {
			continue
		}
		nd.DHT().Kad().RoutingTable().RemovePeer(unknown)
		if near, _ := claimnet.NearRule(nd.DHT(), pos, up, warmup); near(string(unknown)) {
			t.Fatalf("control: %s still counts the removed replica near", nd.Name())
		}
	}
	_, cl := cn.client(t, "w")
	got, err := cl.Claim(context.Background(), key)
	if err != nil {
		t.Fatalf("claim with a replica the others do not know: %v", err)
	}
	if !slices.Contains(got.Granted, unknown) {
		t.Logf("the unknown replica's grant was not among those used: %v", got.Granted)
	}
}
