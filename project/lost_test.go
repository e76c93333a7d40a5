package project_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// lostFlow is a flow whose ledger the test may close and open again (a
// restart of the project), with one job run by a worker.
type lostFlow struct {
	*flow
	path string // the ledger's
	cid  string // the job's
	key  []byte
}

// startLostFlow submits one unit of one copy, has worker w1 run it, and
// takes the result's envelope off every node but keep of those holding
// it (keep < 0: off every node), as a disk loss would. It returns the
// envelope taken.
func startLostFlow(t *testing.T, seed uint64, keep int) (*lostFlow, []byte) {
	t.Helper()
	f := &lostFlow{flow: startFlow(t, 8, seed), path: filepath.Join(t.TempDir(), "ledger.db")}
	f.reopen(t)
	ctx := context.Background()
	units := []project.Unit{{App: "hashchain", Args: []string{"10", "1"}, Keywords: []string{"lhc"}, TFinish: time.Hour}}
	if rep, err := f.proj.SubmitUnits(ctx, f.ledger, units, 1, []byte("lost"), "lost", nil); err != nil || rep.Submitted != 1 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	if n := f.work(t, f.worker(t, "w1")); n != 1 {
		t.Fatalf("worker ran %d jobs, want 1", n)
	}
	f.net.FlushAll(ctx)
	f.cid = ledgerCIDs(t, f.ledger.DB())[0]
	c, err := cid.Decode(f.cid)
	if err != nil {
		t.Fatal(err)
	}
	f.key = c.Bytes()
	var env []byte
	held := 0
	for _, nd := range f.net.Live() {
		raw, ok := nd.Pool().Result(f.key)
		if !ok {
			continue
		}
		env = raw
		if held++; held-1 == keep {
			continue
		}
		if err := nd.Store().Delete(store.Key("result", f.key)); err != nil {
			t.Fatal(err)
		}
		if _, ok := nd.Pool().Result(f.key); ok {
			t.Fatalf("node %s still serves the result", nd.ID())
		}
		if st, _ := nd.Pool().State(f.key); st.Phase != job.Finished {
			t.Fatalf("node %s holds the job %s, want finished", nd.ID(), st.Phase)
		}
	}
	if held < 3 || keep >= held {
		t.Fatalf("%d nodes held the result, want a majority of r and more than %d", held, keep)
	}
	return f, env
}

// reopen closes the ledger (when open) and opens it again.
func (f *lostFlow) reopen(t *testing.T) {
	t.Helper()
	if f.ledger != nil {
		if err := f.ledger.Close(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := project.OpenLedger(f.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f.ledger = l
}

// harvest advances the clock by d, lets the nodes rewrite their index
// entries, and harvests.
func (f *lostFlow) harvest(t *testing.T, d time.Duration) project.HarvestReport {
	t.Helper()
	ctx := context.Background()
	f.clock.Advance(d)
	f.net.WriteAll(ctx)
	f.net.FlushAll(ctx)
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("harvest at +%s: %+v", d, rep)
	return rep
}

// jobRow is a job's ledger state and unservable_since (0: NULL).
func (f *lostFlow) jobRow(t *testing.T, c string) (string, int64) {
	t.Helper()
	var state string
	var since sql.NullInt64
	if err := f.ledger.DB().QueryRow(`SELECT state, unservable_since FROM jobs WHERE cid = ?`, c).Scan(&state, &since); err != nil {
		t.Fatal(err)
	}
	return state, since.Int64
}

// TestHarvestDeclaresLost: a finished job whose result no node serves
// (every copy of the envelope lost) is refused by each harvest until
// T_lost (1 h on the project's clock) after the first, across a restart
// of the project (the ledger closed and opened again keeps when it was
// first found so); then it is declared lost: the harvest exits clean
// with Lost 1, the unit gets another copy, the nodes are told the lost
// job is collected, the new copy runs and validates. A copy of the lost
// job's result that turns up later is not fetched, and the job is told
// collected again.
func TestHarvestDeclaresLost(t *testing.T) {
	f, env := startLostFlow(t, 80, -1)
	rep := f.harvest(t, 0)
	if rep.Refused != 1 || rep.Lost != 0 || rep.Err() == nil || !strings.Contains(rep.Errors[0].Error(), "no node has served it since") {
		t.Fatalf("first harvest %+v: want the job refused, its loss timer started", rep)
	}
	state, since := f.jobRow(t, f.cid)
	if state != project.StateSubmitted || since != f.clock.Now().UnixMilli() {
		t.Fatalf("job %s: %s, unservable since %d; want submitted, since now (%d)", f.cid, state, since, f.clock.Now().UnixMilli())
	}
	first := since

	f.reopen(t) // the project restarts
	if rep = f.harvest(t, 40*time.Minute); rep.Refused != 1 || rep.Lost != 0 || rep.Extra != 0 {
		t.Fatalf("harvest after 40 min %+v: want the job still refused, no copy", rep)
	}
	if state, since = f.jobRow(t, f.cid); state != project.StateSubmitted || since != first {
		t.Fatalf("after a restart and 40 min: %s, since %d; want submitted, since the first harvest (%d)", state, since, first)
	}

	f.reopen(t)
	rep = f.harvest(t, 20*time.Minute) // T_lost after the first harvest
	if rep.Lost != 1 || rep.Refused != 0 || rep.Err() != nil || rep.Collected != 1 {
		t.Fatalf("harvest at T_lost %+v (err %v): want the job declared lost, collected, a clean exit", rep, rep.Err())
	}
	if state, _ = f.jobRow(t, f.cid); state != project.StateLost {
		t.Fatalf("job %s is %s, want lost", f.cid, state)
	}
	cids := ledgerCIDs(t, f.ledger.DB())
	if len(cids) != 2 {
		t.Fatalf("ledger holds %d jobs, want the lost one and its unit's new copy", len(cids))
	}
	copyCID := cids[0]
	if copyCID == f.cid {
		copyCID = cids[1]
	}
	if state, _ = f.jobRow(t, copyCID); state != project.StateSubmitted {
		t.Fatalf("the new copy %s is %s, want submitted", copyCID, state)
	}
	if _, issued, err := f.ledger.UnitOf(copyCID); err != nil || issued != 1 {
		t.Fatalf("unit of the copy: %d copies issued (%v), want 1: the lost job is not waited for", issued, err)
	}
	told := 0
	for _, nd := range f.net.Live() {
		if st, ok := nd.Pool().State(f.key); ok && st.Phase == job.Collected {
			told++
		}
	}
	if told == 0 {
		t.Fatalf("no node holds the lost job collected")
	}

	// The copy runs on another client and validates.
	if n := f.work(t, f.worker(t, "w2")); n != 1 {
		t.Fatalf("second worker ran %d jobs, want the new copy", n)
	}
	if rep = f.harvest(t, 0); rep.Recorded != 1 || rep.Decided != 1 || rep.Err() != nil || rep.Lost != 0 {
		t.Fatalf("harvest of the copy %+v: want it recorded, its unit decided", rep)
	}
	st, err := f.ledger.Stats(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Lost != 1 || st.Units[project.UnitValid] != 1 || st.Jobs[project.StateCollected] != 1 {
		t.Fatalf("stats %+v: want 1 lost job, 1 valid unit, the copy collected", st)
	}

	// The lost job's result turns up on a node (listed again by a stale
	// index entry): it is not fetched, and the node is told collected.
	holder := f.net.Live()[0]
	if err := holder.Store().Put(store.Key("result", f.key), env); err != nil {
		t.Fatal(err)
	}
	real := f.proj.IndexHarvest
	f.proj.SetIndexHarvest(func(ctx context.Context, kw string, n int, visit func([]wire.IndexHit) error) error {
		if err := visit([]wire.IndexHit{{Job: f.key, Project: "lhc", Replicas: [][]byte{[]byte(holder.ID())}}}); err != nil {
			return err
		}
		return real(ctx, kw, n, visit)
	})
	if rep = f.harvest(t, 0); rep.Recorded != 0 || rep.Collected != 1 || rep.Err() != nil {
		t.Fatalf("harvest listing the lost job with its result %+v: want nothing recorded, the job told collected", rep)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE cid = '`+f.cid+`'`); n != 0 {
		t.Fatalf("the lost job's late result reached the ledger")
	}
}

// TestHarvestServableNotLost is the negative control of
// TestHarvestDeclaresLost: the same job with its result still on one of
// its nodes is harvested from there, however late; no loss, no copy.
func TestHarvestServableNotLost(t *testing.T) {
	f, _ := startLostFlow(t, 80, 2)
	rep := f.harvest(t, 0)
	if rep.Recorded != 1 || rep.Refused != 0 || rep.Lost != 0 || rep.Err() != nil {
		t.Fatalf("harvest %+v: want the result fetched from the node that kept it", rep)
	}
	if rep = f.harvest(t, 2*project.DefaultLostAfter); rep.Lost != 0 || rep.Extra != 0 {
		t.Fatalf("harvest after 2·T_lost %+v: want no loss", rep)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs`); n != 1 {
		t.Fatalf("ledger holds %d jobs, want 1: no copy", n)
	}
	if state, since := f.jobRow(t, f.cid); state != project.StateCollected || since != 0 {
		t.Fatalf("job %s: %s, unservable since %d; want collected, never unservable", f.cid, state, since)
	}
}

// TestHarvestLiveJobNotLost: an index node lists a job no client has run
// as finished, naming as its replicas nodes that do not hold it. The
// project asks the job's own closest nodes, which hold it ready: refused
// by every harvest, but never declared lost, however long; no copy.
func TestHarvestLiveJobNotLost(t *testing.T) {
	f := &lostFlow{flow: startFlow(t, 8, 81), path: filepath.Join(t.TempDir(), "ledger.db")}
	f.reopen(t)
	ctx := context.Background()
	units := []project.Unit{{App: "hashchain", Args: []string{"10", "1"}, Keywords: []string{"lhc"}, TFinish: time.Hour}}
	if rep, err := f.proj.SubmitUnits(ctx, f.ledger, units, 1, []byte("live"), "live", nil); err != nil || rep.Submitted != 1 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.cid = ledgerCIDs(t, f.ledger.DB())[0]
	c, err := cid.Decode(f.cid)
	if err != nil {
		t.Fatal(err)
	}
	f.key = c.Bytes()
	var strangers [][]byte // nodes that do not hold the job
	for _, nd := range f.net.Live() {
		if _, ok := nd.Pool().State(f.key); !ok {
			strangers = append(strangers, []byte(nd.ID()))
		}
	}
	if len(strangers) == 0 {
		t.Fatal("every node holds the job")
	}
	real := f.proj.IndexHarvest
	f.proj.SetIndexHarvest(func(ctx context.Context, kw string, n int, visit func([]wire.IndexHit) error) error {
		if err := visit([]wire.IndexHit{{Job: f.key, Project: "lhc", Replicas: strangers}}); err != nil {
			return err
		}
		return real(ctx, kw, n, visit)
	})
	for i, d := range []time.Duration{0, project.DefaultLostAfter, project.DefaultLostAfter} {
		rep := f.harvest(t, d)
		if rep.Refused != 1 || rep.Lost != 0 || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0].Error(), "not lost: node ") ||
			!strings.Contains(rep.Errors[0].Error(), ": ready") {
			t.Fatalf("harvest %d %+v: want the job refused as held ready, not lost", i, rep)
		}
		if state, since := f.jobRow(t, f.cid); state != project.StateSubmitted || since != 0 {
			t.Fatalf("harvest %d: job %s, since %d; want submitted, no loss timer", i, state, since)
		}
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs`); n != 1 {
		t.Fatalf("ledger holds %d jobs, want 1: no copy", n)
	}
}
