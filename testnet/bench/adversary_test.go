package bench_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/bench"
)

// TestAdversarialRun: 10 % Byzantine nodes (the behaviours dealt in
// turn), 30 % clocks skewed within ±10 min and 2 % that jump an hour:
// every job with at most f faulty replicas completes and is harvested
// once, no double claim, no double credit, and every forgery is refused
// and attributed to its Byzantine sender only; jobs with more than f are
// reported. It runs only with UP_ADVERSARIAL=1: a run ends once only jobs
// beyond f are left (GiveUp; with replay among the behaviours, once the
// replays have begun). At full size (64 nodes, 1,000 jobs) every job
// within f is harvested within about a minute. UP_ADVERSARIAL_CLAIM_MANY=K
// has the clients claim up to K jobs of a place at once.
func TestAdversarialRun(t *testing.T) {
	if os.Getenv("UP_ADVERSARIAL") != "1" {
		t.Skip("UP_ADVERSARIAL=1 runs it (5 min; -short: 24 nodes, 100 jobs)")
	}
	// Production periods scaled by 1/60 (T_collect 2 min: republish every
	// 25 s, backup listers after 10 s), so repairs happen within the run.
	o := bench.Options{Nodes: 64, Jobs: 1000, Copies: 2, Clients: 20, Dir: t.TempDir(), Timeout: 5 * time.Minute,
		TCollect: 2 * time.Minute}
	if testing.Short() {
		o.Nodes, o.Jobs, o.Clients = 24, 100, 6
	}
	behaviours := testnet.Behaviours
	if b := os.Getenv("UP_ADVERSARIAL_BEHAVIOURS"); b != "" { // to look for a loss one behaviour at a time
		behaviours = strings.Split(b, ",")
	}
	if k := os.Getenv("UP_ADVERSARIAL_CLAIM_MANY"); k != "" { // clients claiming several jobs of a place at once
		n, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("UP_ADVERSARIAL_CLAIM_MANY=%q: %v", k, err)
		}
		o.ClaimMany = n
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
	rep, err := bench.Run(context.Background(), o)
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
