package bench_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/bench"
)

// behaviourRun is what one small adversarial bench found.
type behaviourRun struct {
	rep      bench.Report
	adv      testnet.AdversaryReport
	counts   map[string]int         // what the Byzantine node did
	evidence []pool.Evidence        // the honest nodes' evidence
	byz      string                 // the Byzantine node's name
	extra    map[string]interface{} // what the behaviour's inspect found
}

// runBehaviour runs a small bench (8 nodes, r = 5, 24 jobs of 2 copies,
// 2 clients, 8 jobs/s offered) with one Byzantine node showing behaviour
// b, acting every 200 ms, and checks what every behaviour must keep: every
// job harvested exactly once, every unit validated, no double claim, no
// double credit, no evidence against an honest node. inspect, when set,
// runs after the last harvest with the network open.
func runBehaviour(t *testing.T, b string, edit func(*bench.Options), inspect func(*testnet.Network, *behaviourRun)) behaviourRun {
	t.Helper()
	o := bench.Options{Nodes: 8, R: 5, Clients: 2, Jobs: 24, Copies: 2, Rate: 8, Dir: t.TempDir(), Seed: 5,
		Timeout: 2 * time.Minute, Log: testLog{t}, BackupDelay: 5 * time.Second}
	o.Adversary = testnet.Adversary{Byzantine: 1.0 / 8, Behaviours: []string{b}, Interval: 200 * time.Millisecond}
	if edit != nil {
		edit(&o)
	}
	var run behaviourRun
	var checkErr error
	o.Inspect = func(net *testnet.Network, ledger *project.Ledger) {
		time.Sleep(2 * o.Adversary.Interval) // a round past the last harvest
		run.adv, checkErr = net.CheckAdversary(ledger, o.R, 1)
		for i, beh := range net.Byzantine() {
			if beh == b {
				run.byz = net.Node(i).Name()
			}
		}
		for _, nd := range net.Live() {
			if nd.Name() != run.byz {
				run.evidence = append(run.evidence, nd.Pool().Evidence()...)
			}
		}
		run.extra = map[string]interface{}{}
		if inspect != nil {
			inspect(net, &run)
		}
		run.counts = net.AdversaryCounts()
	}
	rep, err := bench.Run(context.Background(), o)
	run.rep = rep
	if err != nil {
		t.Fatal(err)
	}
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	t.Logf("%s: %s", b, run.adv.String())
	t.Logf("%s: did %v", b, run.counts)
	if run.byz == "" {
		t.Fatalf("no node shows %s: %v", b, run.adv.Byzantine)
	}
	if err := rep.Consistent(); err != nil {
		t.Errorf("%s: %v (errors %v)", b, err, rep.Errors)
	}
	for _, p := range run.adv.Problems() {
		t.Errorf("%s: %s", b, p)
	}
	return run
}

// reasons counts the evidence records whose reason contains each of subs.
func reasons(evs []pool.Evidence, subs ...string) map[string]int {
	out := map[string]int{}
	for _, e := range evs {
		for _, s := range subs {
			if strings.Contains(e.Reason, s) {
				out[s]++
			}
		}
	}
	return out
}

// TestBehaviourForgeGrants: a node that grants and accepts every claim
// (equivocating, signed properly) makes no job claimed twice, and the
// claimed states it sends with certificates of forged acceptances — in
// the replicas' names under its own keys, under keys of a made-up CA, by
// made-up peers its own account placed — are all refused and kept as
// evidence against it, each way for its own reason.
func TestBehaviourForgeGrants(t *testing.T) {
	// The forger forges on the jobs it holds ready or claimed at each of
	// its rounds; jobs here pass through those states in well under the
	// default 200 ms, so one run in three saw none at a round boundary.
	run := runBehaviour(t, testnet.BehaviourForgeGrants, func(o *bench.Options) { o.Adversary.Interval = 40 * time.Millisecond }, nil)
	c := run.counts
	if c["forge-grants/granted"] == 0 || c["forge-grants/accepted"] == 0 {
		t.Errorf("the forger granted %d claims and accepted %d confirms: the clients never asked it", c["forge-grants/granted"], c["forge-grants/accepted"])
	}
	// Control: the forgeries reached the replicas, and each was refused.
	if c["forge-grants/sent"] == 0 {
		t.Fatal("no forged certificate reached a replica")
	}
	// A forgery that reaches a replica where the job is already finished
	// or collected changes nothing and is not checked, so fewer are
	// refused than sent (about half under the race detector).
	refused := run.adv.Refused[run.byz]
	t.Logf("%d forged certificates delivered, %d refused against %s", c["forge-grants/sent"], refused, run.byz)
	if refused == 0 {
		t.Errorf("%d forged certificates delivered, none refused against %s", c["forge-grants/sent"], run.byz)
	}
	// Made-up peers are refused as far from the job or, when the distance
	// rule counts them (in a network this small, most), as acceptances
	// under one node certificate.
	why := reasons(run.evidence, "position record names peer", "is not our CA", "acceptances from the job's closest nodes",
		"two acceptances under the certificate of")
	t.Logf("refusal reasons %v", why)
	for s, k := range why {
		if k == 0 {
			t.Errorf("no forged certificate refused for %q", s)
		}
	}
	// The three ways are dealt by round and job, so a short run may send
	// only one (a fast one sent 8 forgeries, all one way); which ways were
	// refused is logged above, and the helper's runs saw all three.
	if len(why) == 0 {
		t.Errorf("evidence %d records: no forged certificate refused for any known reason", len(run.evidence))
	}
}

// TestBehaviourAlter: a node that serves altered results and sends
// finished states naming them gets every forged state refused and
// attributed to it; the project refuses the altered copies it is served
// and records an honest copy of every result.
func TestBehaviourAlter(t *testing.T) {
	run := runBehaviour(t, testnet.BehaviourAlter, nil, nil)
	c := run.counts
	t.Logf("project refused %d altered copies", run.rep.RefusedCopies)
	if c["alter/sent"] == 0 {
		t.Fatal("no forged finished state reached a replica")
	}
	if c["alter/served"] == 0 {
		t.Fatal("the alterer never served an altered result")
	}
	refused := run.adv.Refused[run.byz]
	if refused == 0 {
		t.Fatalf("%d forged finished states delivered, none refused against %s", c["alter/sent"], run.byz)
	}
	if why := reasons(run.evidence, "outer signature"); why["outer signature"] == 0 {
		t.Errorf("no altered envelope refused for its outer signature (evidence %d)", len(run.evidence))
	}
	if run.rep.RefusedCopies > c["alter/served"] {
		t.Errorf("the project refused %d copies, only %d were altered", run.rep.RefusedCopies, c["alter/served"])
	}
}

// TestBehaviourLieNear: a node that answers near questions with itself,
// the Byzantine nodes and made-up peers does not stop any job from being
// submitted, found, claimed, harvested and collected once; the lies were
// told. What a lie does to one walk is logged: an honest node walks to the
// liar's own position, where it asks the liar first and, the liar being
// the nearest node that answered, takes its answer (made-up peers
// included) as the neighbourhood.
func TestBehaviourLieNear(t *testing.T) {
	// One submission of every job: the project crawls the overlay first.
	closedLoop := func(o *bench.Options) { o.Rate, o.Batch = 0, o.Jobs }
	run := runBehaviour(t, testnet.BehaviourLieNear, closedLoop, func(net *testnet.Network, run *behaviourRun) {
		var liar, honest int
		for i := range net.Len() {
			if net.Node(i).Name() == run.byz {
				liar = i
			} else {
				honest = i
			}
		}
		live := map[string]bool{}
		for _, nd := range net.Live() {
			live[string(nd.ID())] = true
		}
		pos := keyspace.PeerPos([]byte(net.Node(liar).ID()))
		got, err := net.Node(honest).DHT().Walk(context.Background(), pos, 5)
		madeUp := 0
		for _, p := range got {
			if !live[string(p)] {
				madeUp++
			}
		}
		run.extra["walk"], run.extra["walk-made-up"], run.extra["walk-err"] = len(got), madeUp, err

	})
	c := run.counts
	t.Logf("a walk to the liar's position: %v nodes, %v made up (err %v)", run.extra["walk"], run.extra["walk-made-up"], run.extra["walk-err"])
	if c["lie-near/answered"] == 0 || c["lie-near/made-up"] == 0 {
		t.Fatalf("the liar answered %d near questions with %d made-up peers", c["lie-near/answered"], c["lie-near/made-up"])
	}
}

// TestBehaviourReplay: a node that re-stores deleted jobs' signed specs
// and resends their old claims (T_collect 3 s, so jobs are deleted and
// their keys remembered during the run) brings no job back on any of its
// r closest nodes, which refuse the stores as collected; a node that never
// held the job (not among its r closest) takes it, and learns from the
// job's closest at its next republish round that it was collected.
func TestBehaviourReplay(t *testing.T) {
	var heldAfter, notCollected int
	var counts map[string]int
	afterEmpty := func(net *testnet.Network) {
		// The replays come after the replayer deleted the jobs, 5
		// intervals apart: wait for the rounds.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if c := net.AdversaryCounts(); c["replay/store-sent"] > 0 && time.Now().After(deadline.Add(-17*time.Second)) {
				break
			}
		}
		counts = net.AdversaryCounts()
		// The holders that took a replayed job sync it to its closest.
		net.RepublishAll(context.Background())
		for _, nd := range net.Live() {
			nd.Pool().Each(func(h pool.Held) bool {
				heldAfter++
				if h.State.Phase != job.Collected {
					notCollected++
					t.Logf("%s holds job %x as %s after a republish round", nd.Name(), h.Key[len(h.Key)-4:], h.State.Phase)
				}
				return true
			})
		}
	}
	run := runBehaviour(t, testnet.BehaviourReplay, func(o *bench.Options) {
		o.TCollect = 3 * time.Second
		o.AfterEmpty = afterEmpty
	}, nil)
	c := counts
	t.Logf("replay: did %v; after a republish round %d copies held, %d not collected", c, heldAfter, notCollected)
	if c["replay/store-sent"] == 0 || c["replay/recorded"] == 0 {
		t.Fatalf("the replayer recorded %d states and delivered %d stores", c["replay/recorded"], c["replay/store-sent"])
	}
	if c["replay/store-gone"] == 0 {
		t.Errorf("no replayed store refused as collected: %v", c)
	}
	if n := c["replay/resurrected-replica"]; n > 0 {
		t.Errorf("%d replayed stores brought a collected job back on one of its r closest", n)
	}
	if notCollected > 0 {
		t.Errorf("%d replayed copies not known collected after a republish round", notCollected)
	}
	if len(run.evidence) > 0 && !slices.ContainsFunc(run.evidence, func(e pool.Evidence) bool { return e.Sender == run.byz }) {
		t.Errorf("evidence against others than the replayer: %v", run.evidence[0])
	}
}

// TestAdversaryValidateBehaviours: every behaviour is accepted, has its
// help line, and a negative interval is refused.
func TestAdversaryValidateBehaviours(t *testing.T) {
	for _, b := range testnet.Behaviours {
		if err := (testnet.Adversary{Byzantine: 0.1, Behaviours: []string{b}}).ValidateAdversary(); err != nil {
			t.Errorf("%s: %v", b, err)
		}
		if testnet.BehaviourHelp[b] == "" {
			t.Errorf("%s: no help line", b)
		}
	}
	err := (testnet.Adversary{Byzantine: 0.1, Behaviours: []string{"replay"}, Interval: -time.Second}).ValidateAdversary()
	if err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("negative interval: error %v", err)
	}
	err = (testnet.Adversary{Byzantine: 0.1, Behaviours: []string{"forge-grant"}}).ValidateAdversary()
	if err == nil || !strings.Contains(err.Error(), `"forge-grant" unknown`) {
		t.Errorf("misspelt behaviour: error %v", err)
	}
}
