package indexwriter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
)

// dueNet is 16 nodes on a test clock with 30 jobs submitted and listed,
// whose writers make a full visit only every hour (FullRound) and whose
// backup listers wait backupDelay.
func dueNet(t *testing.T, seed uint64, backupDelay time.Duration) (*testnet.Network, *testnet.Clock, [][]byte) {
	t.Helper()
	clock := testnet.NewClock(time.Now())
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 16, Seed: seed, Now: clock.Now,
		IndexWriter: indexwriter.Config{FullRound: time.Hour, BackupDelay: backupDelay}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Agent().Close() })
	var keys [][]byte
	for i := range 30 {
		spec, err := p.NewSpec("hashchain", []string{fmt.Sprint(i)}, []string{"lhc"}, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := p.Sign(spec)
		if err != nil {
			t.Fatal(err)
		}
		if r := p.Submit(ctx, []*project.Prepared{pr}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		keys = append(keys, pr.Key())
	}
	net.FlushAll(ctx)
	return net, clock, keys
}

// roundEach runs one writer round on every live node and sums them;
// full counts the nodes whose round visited every job.
func roundEach(net *testnet.Network) (sum indexwriter.WriteStats, full int) {
	for _, nd := range net.Live() {
		st := nd.Writer().Round(context.Background())
		sum.Written += st.Written
		sum.Rewritten += st.Rewritten
		sum.Withdrawn += st.Withdrawn
		sum.Failed += st.Failed
		sum.Visited += st.Visited
		if st.Full {
			full++
		}
	}
	return sum, full
}

// TestRoundVisitsOnlyDueJobs: once a writer made its full visit, a round
// with its view of the nodes unchanged visits no job until a rewrite
// comes due, and then rewrites every entry from its due queue (no full
// visit: FullRound is an hour); each round still probes the peers ahead,
// so when a job's writer dies the next closest's very next round is a
// full visit and takes the listing over. The control forgets what the
// next closest watches: its round then visits nothing and the job stays
// unlisted by it.
func TestRoundVisitsOnlyDueJobs(t *testing.T) {
	for _, watch := range []bool{true, false} {
		net, clock, keys := dueNet(t, 71, 2*time.Hour) // only the closest lists
		if _, full := roundEach(net); full != len(net.Live()) {
			t.Fatalf("first rounds: %d of %d full", full, len(net.Live()))
		}
		entries := 0
		for _, nd := range net.Live() {
			entries += nd.Writer().Entries()
		}
		if entries < len(keys) {
			t.Fatalf("%d entries written for %d jobs", entries, len(keys))
		}
		if st, full := roundEach(net); full != 0 || st.Visited != 0 || st.Written+st.Rewritten+st.Withdrawn != 0 {
			t.Fatalf("second rounds, nothing due: %d full, %+v", full, st)
		}
		clock.Advance(15*time.Minute + time.Second) // RewriteMax: every entry due
		st, full := roundEach(net)
		if full != 0 || st.Rewritten != entries || st.Written != 0 || st.Visited != len(keys) {
			t.Fatalf("rounds after RewriteMax: %d full, %+v; want every one of %d entries rewritten from the queue", full, st, entries)
		}
		t.Logf("after RewriteMax: %+v (%d entries)", st, entries)

		victim := keys[0]
		closest := net.TrueClosest(victim, 2)
		writer, next := net.Node(net.Index(closest[0])), net.Node(net.Index(closest[1]))
		if len(writer.Writer().Placed(victim)) == 0 || len(next.Writer().Placed(victim)) != 0 {
			t.Fatalf("before the kill: writer placed %v, next %v", writer.Writer().Placed(victim), next.Writer().Placed(victim))
		}
		if !watch {
			next.Writer().Unwatch()
		}
		if err := net.Kill(net.Index(closest[0])); err != nil {
			t.Fatal(err)
		}
		got := next.Writer().Round(context.Background())
		placed := len(next.Writer().Placed(victim)) > 0
		t.Logf("watch %v: next closest's round after the kill %+v, lists the job: %v", watch, got, placed)
		if watch != got.Full || watch != placed {
			t.Fatalf("watch %v: the next closest's round was full %v and lists the job %v", watch, got.Full, placed)
		}
		if q := next.Writer().QueuedForTests(); q > 4*entries {
			t.Fatalf("due queue holds %d items for %d entries", q, entries)
		}
	}
}

// TestBackupListsFromTheQueue: a job's closest node drops it; its backup
// lister lists it when its wait ends, from its due queue, in a round that
// is not a full visit (FullRound is an hour), and not a second before.
func TestBackupListsFromTheQueue(t *testing.T) {
	net, clock, keys := dueNet(t, 73, 10*time.Minute)
	roundEach(net)
	ctx := context.Background()
	key := keys[0]
	closest := net.TrueClosest(key, 2)
	if err := net.Node(net.Index(closest[0])).Pool().Forget(key); err != nil {
		t.Fatal(err)
	}
	net.FlushAll(ctx) // the closest withdraws what it wrote
	backup := net.Node(net.Index(closest[1])).Writer()
	if st := backup.Round(ctx); st.Full || len(backup.Placed(key)) != 0 {
		t.Fatalf("backup lists the job before its wait: %+v", st)
	}
	clock.Advance(10*time.Minute - time.Second)
	if st := backup.Round(ctx); st.Full || len(backup.Placed(key)) != 0 {
		t.Fatalf("backup lists the job a second before its wait ends: %+v", st)
	}
	clock.Advance(2 * time.Second)
	st := backup.Round(ctx)
	if st.Full || len(backup.Placed(key)) == 0 {
		t.Fatalf("backup's round after its wait: %+v, placed %v; want the job listed from the queue", st, backup.Placed(key))
	}
	t.Logf("backup's round after its wait: %+v", st)
}

// TestClockJumpMakesRoundFull: a node whose clock jumps back (before its
// last full visit) cannot trust its due times, so its next round visits
// every job; one that jumps forward finds every rewrite due and makes it
// from the queue, losing no entry.
func TestClockJumpMakesRoundFull(t *testing.T) {
	net, clock, _ := dueNet(t, 77, 2*time.Hour)
	roundEach(net)
	entries := 0
	for _, nd := range net.Live() {
		entries += nd.Writer().Entries()
	}
	clock.Advance(-time.Hour)
	if _, full := roundEach(net); full != len(net.Live()) {
		t.Fatalf("after a jump back: %d of %d rounds full", full, len(net.Live()))
	}
	clock.Advance(time.Hour + 20*time.Minute)
	st, _ := roundEach(net)
	after := 0
	for _, nd := range net.Live() {
		after += nd.Writer().Entries()
	}
	if st.Rewritten != entries || after != entries {
		t.Fatalf("after a jump forward: %+v, %d entries kept of %d", st, after, entries)
	}
}
