package testnet_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
)

// TestAdversaryValidate: bad adversarial options are refused in one line.
func TestAdversaryValidate(t *testing.T) {
	for _, c := range []struct {
		a    testnet.Adversary
		want string // "" valid
	}{
		{testnet.Adversary{}, ""},
		{testnet.Adversary{Byzantine: 0.1, Behaviours: testnet.Behaviours, Skewed: 0.3, Skew: 10 * time.Minute, Jump: 0.1}, ""},
		{testnet.Adversary{Byzantine: 1.5, Behaviours: []string{"deny"}}, "out of [0, 1]"},
		{testnet.Adversary{Byzantine: 0.1}, "no behaviour"},
		{testnet.Adversary{Byzantine: 0.1, Behaviours: []string{"lie"}}, `behaviour "lie" unknown`},
		{testnet.Adversary{Skewed: 0.8, Jump: 0.5}, "more than all nodes"},
		{testnet.Adversary{Skewed: 0.1, Skew: -time.Second}, "negative"},
	} {
		err := c.a.ValidateAdversary()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.a, err, c.want)
		}
	}
}

// TestAdversarialNetworkChoosesNodes: the Byzantine nodes and skewed
// clocks are the fractions asked for, chosen by the seed.
func TestAdversarialNetworkChoosesNodes(t *testing.T) {
	o := testnet.Options{Nodes: 20, Dir: t.TempDir(), Seed: 3}
	o.Adversary = testnet.Adversary{Byzantine: 0.2, Behaviours: testnet.Behaviours, Skewed: 0.3, Skew: 4 * time.Minute, Jump: 0.1}
	net, err := testnet.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	byz := net.Byzantine()
	seen := map[string]int{}
	for _, b := range byz {
		seen[b]++
	}
	if len(byz) != 4 || len(seen) != 4 {
		t.Errorf("Byzantine nodes %v, want 4 with the 4 behaviours", byz)
	}
	skewed, jumps := 0, 0
	for i := range net.Len() {
		off, jump := net.ClockOffset(i)
		if off > 10*time.Minute || off < -10*time.Minute {
			t.Errorf("node %d skewed %v", i, off)
		}
		if off != 0 {
			skewed++
		}
		if jump {
			jumps++
		}
	}
	if skewed != 6 || jumps != 2 {
		t.Errorf("%d skewed clocks and %d jumping, want 6 and 2", skewed, jumps)
	}
}

// TestAdversarialRun: 10 % Byzantine nodes (the behaviours dealt in
// turn), 30 % clocks skewed within ±10 min and 2 % that jump an hour:
// every job with at most f faulty replicas completes and is harvested
// once, no double claim, no double credit, and every forgery is refused
// and attributed to its Byzantine sender only; jobs with more than f are
// reported. It runs only with UP_ADVERSARIAL=1: a run ends once only jobs
// beyond f are left (GiveUp; with replay among the behaviours, once the
// replays have begun). At full size (64 nodes, 1,000 jobs) every job
// within f is harvested within about a minute.
func TestAdversarialRun(t *testing.T) {
	if os.Getenv("UP_ADVERSARIAL") != "1" {
		t.Skip("UP_ADVERSARIAL=1 runs it (5 min; -short: 24 nodes, 100 jobs)")
	}
	// Production periods scaled by 1/60 (T_collect 2 min: republish every
	// 25 s, backup listers after 10 s), so repairs happen within the run.
	o := testnet.BenchOptions{Nodes: 64, Jobs: 1000, Copies: 2, Clients: 20, Dir: t.TempDir(), Timeout: 5 * time.Minute,
		TCollect: 2 * time.Minute}
	if testing.Short() {
		o.Nodes, o.Jobs, o.Clients = 24, 100, 6
	}
	behaviours := testnet.Behaviours
	if b := os.Getenv("UP_ADVERSARIAL_BEHAVIOURS"); b != "" { // to look for a loss one behaviour at a time
		behaviours = strings.Split(b, ",")
	}
	o.Adversary = testnet.Adversary{Byzantine: 0.1, Behaviours: behaviours, Skewed: 0.3, Skew: 10 * time.Minute, Jump: 0.02}
	var adv testnet.AdversaryReport
	var checkErr error
	o.Inspect = func(net *testnet.Network, ledger *project.Ledger) {
		time.Sleep(2 * testnet.ForgeInterval) // a forgers' round past the last harvest
		adv, checkErr = net.CheckAdversary(ledger, 5, 1)
	}
	o.GiveUp = func(net *testnet.Network, ledger *project.Ledger) bool {
		if slices.Contains(behaviours, "replay") && net.AdversaryCounts()["replay/store-sent"] == 0 {
			return false // replays begin T_collect after a harvest: wait for them to be refused
		}
		rep, err := net.CheckAdversary(ledger, 5, 1)
		return err == nil && len(rep.Unharvested) > 0 && rep.UnharvestedWithinF == 0
	}
	o.Log = testLogWriter{t}
	start := time.Now()
	rep, err := testnet.RunBench(context.Background(), o)
	t.Logf("%d nodes, %d jobs, %d clients in %s", o.Nodes, o.Jobs, o.Clients, time.Since(start).Round(time.Second))
	t.Log(adv.String())
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	for _, p := range adv.Problems() {
		t.Error(p)
	}
	if err != nil {
		if adv.UnharvestedWithinF > 0 || len(adv.Unharvested) == 0 {
			t.Fatal(err)
		}
		t.Logf("%v: only jobs beyond f left", err)
		return
	}
	if err := rep.Consistent(); err != nil {
		t.Errorf("run: %v", err)
	}
}

// testLogWriter writes a run's progress lines to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
