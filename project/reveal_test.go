package project_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// commitFile is a unit of two copies that commit before they reveal.
const commitFile = "app: hashchain\nargs: [\"1000\", \"%s\"]\nkeywords: [lhc]\ncopies: 2\ncommit: true\nreveal_wait: 10m\n"

// commitPoll is how often the tests' clients count a unit's commitments.
const commitPoll = 20 * time.Millisecond

// committer is f.worker counting commitments every commitPoll.
func (f *flow) committer(t *testing.T, name string) *client.Client {
	t.Helper()
	return f.committerAt(t, name, f.clock.Now)
}

// realClockCommitter is committer on the real clock (time.Now).
func (f *flow) realClockCommitter(t *testing.T, name string) *client.Client {
	t.Helper()
	return f.committerAt(t, name, time.Now)
}

func (f *flow) committerAt(t *testing.T, name string, now func() time.Time) *client.Client {
	t.Helper()
	a, err := f.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r, err := runner.New(runner.Config{Launcher: testkit.Launcher(), WorkRoot: t.TempDir(),
		Allow: map[string][]string{"lhc": {"*"}}, Env: testkit.LauncherEnv()})
	if err != nil {
		t.Fatal(err)
	}
	// One job per claim: these clients run one cycle at a time by hand
	// (RunOne) and wait in it for their sibling's commitment; a client
	// choosing its groups would be served both copies of a unit and
	// decline the sibling only at its next query (client.Config.ClaimMany).
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: r, Slots: 1,
		ClaimMany: 1, Now: now, CommitPoll: commitPoll})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// copier is a client driven by hand: it claims a copy, commits to an
// output of its own, and may reveal another.
type copier struct {
	a      *agent.Agent
	cl     *claimclient.Claimer
	claim  *claimclient.Claim
	signed *job.Signed
	spec   *job.Spec
}

// copierClaims has a client named name claim one listed copy.
func (f *flow) copierClaims(t *testing.T, name string) *copier {
	t.Helper()
	ctx := context.Background()
	a, err := f.net.NewAgent(ctx, certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	hits, err := a.Index().Find(ctx, "lhc", 1)
	if err != nil || len(hits) == 0 {
		t.Fatalf("%s finds no job: %v", name, err)
	}
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), f.clock.Now, 0)
	cl.SetCommitPoll(commitPoll)
	c, err := cl.ClaimHit(ctx, hits[0])
	if err != nil {
		t.Fatal(err)
	}
	signed, spec, err := client.FetchSpec(ctx, a, f.clock.Now(), c.Job, c.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	return &copier{a: a, cl: cl, claim: c, signed: signed, spec: spec}
}

// commit commits to output on the unit's board and waits as an honest
// client does before revealing.
func (c *copier) commit(ctx context.Context, projectCert, output []byte) error {
	cm := result.SignCommit(c.a.Identity().Key, c.signed.Key(), c.spec.BoardKey(), output)
	post := &wire.CommitPost{Signed: c.signed.Encode(), Cert: projectCert, Commit: cm.Encode()}
	_, err := c.cl.Commit(ctx, cm.Board, post, int(c.spec.Commit), time.Duration(c.spec.RevealWaitMS())*time.Millisecond)
	return err
}

// reveal seals output, with this client's salt, and delivers it.
func (c *copier) reveal(t *testing.T, output, projectKey []byte, at time.Time) {
	t.Helper()
	id := c.a.Identity()
	key := c.signed.Key()
	env, err := result.Seal(result.Inner{Job: key, ClientCert: id.Cert.Raw, Output: output, At: at.UnixMilli(),
		Salt: result.CommitSalt(id.Key, key)}, id.Key, projectKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.cl.SubmitResult(context.Background(), c.claim, env.Encode()); err != nil {
		t.Fatal(err)
	}
}

// TestRevealCannotCopy (issue 22): a unit of two copies with commit–reveal.
// The copier commits to an output of its own ("42"), then, after the
// honest client revealed and the project recorded the honest result, it
// learns that result and reveals it instead of its own. The harvest
// refuses the copier's reveal (it does not match its commitment): its
// result is recorded failed, attributed, with no credit; the unit gets a
// third copy, and the honest result is canonical only once a second
// honest client's matching copy comes. TestRevealCannotCopyControl runs
// the same with the check off: the copied reveal is then credited.
func TestRevealCannotCopy(t *testing.T) { revealCopyScenario(t, true) }

// TestRevealCannotCopyControl is TestRevealCannotCopy with the harvest's
// reveal check turned off: the copier's copied result then makes the
// quorum with the honest one and earns credit, which is what the check
// prevents.
func TestRevealCannotCopyControl(t *testing.T) { revealCopyScenario(t, false) }

func revealCopyScenario(t *testing.T, check bool) {
	defer project.SetRevealCheck(check)()
	f := startFlow(t, 8, 77)
	ctx := context.Background()
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(fmt.Sprintf(commitFile, "copy")), "copy.yaml", nil); err != nil || rep.Submitted != 2 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	projCert, projKey := f.proj.Agent().Identity().Cert.Raw, f.proj.Agent().Identity().ResultPublicKey()
	cp := f.copierClaims(t, "copier")
	committed := make(chan error, 1)
	go func() { committed <- cp.commit(ctx, projCert, []byte("42\n")) }()
	honest := f.committer(t, "honest1")
	f.net.FlushAll(ctx)
	if ran, err := honest.RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("honest1: ran %v, %v", ran, err)
	}
	if err := <-committed; err != nil {
		t.Fatalf("copier's commitment: %v", err)
	}
	f.net.FlushAll(ctx)
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || rep.Recorded != 1 || rep.Reveals.Refused != 0 || (check && rep.Reveals.Checked != 1) {
		t.Fatalf("first harvest: %+v %v (want the honest result, its reveal checked)", rep, err)
	}
	// The copier learns the honest output and reveals it as its own.
	var leaked []byte
	if err := f.ledger.DB().QueryRow(`SELECT output FROM results`).Scan(&leaked); err != nil {
		t.Fatal(err)
	}
	cp.reveal(t, leaked, projKey, f.clock.Now())
	f.net.FlushAll(ctx)
	rep, err = f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	credit := f.credit(t)
	if !check {
		if rep.Decided != 1 || credit["copier"].Valid != 1 {
			t.Fatalf("control, the check off: %+v, credit %+v: the copied reveal should pass without the check", rep, credit)
		}
		return
	}
	if rep.Recorded != 1 || rep.Reveals.Refused != 1 || rep.Decided != 0 || rep.Extra != 1 {
		t.Fatalf("second harvest: %+v (want the copier's reveal refused, the unit undecided, a third copy)", rep)
	}
	var why string
	if err := f.ledger.DB().QueryRow(`SELECT error FROM results WHERE client = 'copier'`).Scan(&why); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(why, project.RevealPrefix) || !strings.Contains(why, result.ErrRevealMismatch.Error()) {
		t.Fatalf("copier's result recorded with error %q", why)
	}
	// A second honest client's copy makes the quorum with the first.
	if n := f.work(t, f.committer(t, "honest2")); n != 1 {
		t.Fatalf("honest2 ran %d jobs", n)
	}
	f.net.FlushAll(ctx)
	rep, err = f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || rep.Recorded != 1 || rep.Decided != 1 || rep.Reveals.Refused != 0 {
		t.Fatalf("third harvest: %+v %v", rep, err)
	}
	credit = f.credit(t)
	if credit["copier"].Valid != 0 || credit["copier"].Invalid != 1 || credit["honest1"].Valid != 1 || credit["honest2"].Valid != 1 {
		t.Fatalf("credit %+v", credit)
	}
	var canonical []byte
	if err := f.ledger.DB().QueryRow(`SELECT r.output FROM units u JOIN results r ON r.cid = u.canonical`).Scan(&canonical); err != nil {
		t.Fatal(err)
	}
	if string(canonical) != string(leaked) {
		t.Fatalf("canonical %q, want the honest output %q", canonical, leaked)
	}
}

// credit is the ledger's credit by client name.
func (f *flow) credit(t *testing.T) map[string]project.Credit {
	t.Helper()
	st, err := f.ledger.Stats(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]project.Credit{}
	for _, c := range st.Credit {
		out[c.Client] = c
	}
	return out
}

// boardJobs is the most jobs of a unit any of its board's nodes counts
// committed, asked by the project.
func (f *flow) boardJobs(t *testing.T, board []byte) int {
	t.Helper()
	ctx := context.Background()
	a := f.proj.Agent()
	nodes, err := a.DHT().ClosestN(ctx, board, a.DHT().Replication())
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, n := range nodes {
		var resp wire.CommitGetResponse
		if err := a.Endpoint().Call(ctx, n, wire.ProtoCommitGet, &wire.CommitGetRequest{Board: board}, wire.MaxCommitFrame, &resp); err == nil {
			most = max(most, int(resp.Jobs))
		}
	}
	return most
}

// unitBoard is the board key of the ledger's (one) unit.
func (f *flow) unitBoard(t *testing.T) []byte {
	t.Helper()
	var signed []byte
	if err := f.ledger.DB().QueryRow(`SELECT signed FROM specs LIMIT 1`).Scan(&signed); err != nil {
		t.Fatal(err)
	}
	_, spec, err := job.Decode(signed)
	if err != nil {
		t.Fatal(err)
	}
	return spec.BoardKey()
}

// runOne runs one job of c in the background, looking again while it
// finds none (for up to 30 s: an entry may be listed late); the channel
// gets its error.
func (f *flow) runOne(c *client.Client) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		deadline := time.Now().Add(30 * time.Second)
		for {
			f.net.FlushAll(ctx)
			ran, err := c.RunOne(ctx, "lhc")
			if ran || time.Now().After(deadline) {
				if err == nil && !ran {
					err = fmt.Errorf("no job run")
				}
				done <- err
				return
			}
		}
	}()
	return done
}

// await is the error ch gets, failing the test after a minute without.
func await(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(time.Minute):
		t.Fatal("no answer in a minute")
		return nil
	}
}

// TestRevealWaitsForQuorum (issue 22): a client that committed does not
// reveal while its unit's board counts fewer than the unit's quorum of
// committed copies (2), and reveals once the other copy commits.
func TestRevealWaitsForQuorum(t *testing.T) {
	f := startFlow(t, 8, 78)
	ctx := context.Background()
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(fmt.Sprintf(commitFile, "wait")), "wait.yaml", nil); err != nil || rep.Submitted != 2 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	board := f.unitBoard(t)
	first := f.committer(t, "honest1")
	done := f.runOne(first)
	testkit.WaitFor(t, 30*time.Second, "the first copy's commitment on the board", func() bool { return f.boardJobs(t, board) == 1 })
	// An absence cannot be awaited: the client counts every 20 ms, so in
	// half a second it had some 25 chances to reveal early.
	select {
	case err := <-done:
		t.Fatalf("revealed with one commitment of two on the board (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	f.net.FlushAll(ctx)
	if rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 0 {
		t.Fatalf("harvest before the second commitment: %+v %v (want no result)", rep, err)
	}
	second := f.committer(t, "honest2")
	done2 := f.runOne(second)
	for _, ch := range []<-chan error{done2, done} {
		if err := await(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []*client.Client{first, second} {
		tot := c.CommitTotals()
		if tot.Jobs != 1 || tot.Failed != 0 || tot.Timeouts != 0 {
			t.Fatalf("client %d: %+v (want one commitment, revealed on the quorum)", i+1, tot)
		}
		t.Logf("client %d commit–reveal cost: %d RPCs, %d bytes, %d board lookups, waited %v", i+1, tot.RPCs, tot.Bytes, tot.Lookups, tot.Waited)
	}
	f.net.FlushAll(ctx)
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || rep.Recorded != 2 || rep.Decided != 1 || rep.Reveals.Checked != 2 || rep.Reveals.Refused != 0 {
		t.Fatalf("harvest: %+v %v (want both results, checked, the unit decided)", rep, err)
	}
	t.Logf("project commit–reveal cost: %+v", rep.Reveals)
}

// TestRevealDeadline: a copy whose sibling never commits reveals once the
// spec's reveal wait (10 min) has passed on its own clock, so a missing
// copy cannot hold a result back for ever.
func TestRevealDeadline(t *testing.T) {
	f := startFlow(t, 8, 79)
	ctx := context.Background()
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(fmt.Sprintf(commitFile, "late")), "late.yaml", nil); err != nil || rep.Submitted != 2 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	board := f.unitBoard(t)
	c := f.committer(t, "honest1")
	done := f.runOne(c)
	testkit.WaitFor(t, 30*time.Second, "the commitment on the board", func() bool { return f.boardJobs(t, board) == 1 })
	// The board shows the commitment once its first node stored it; the
	// client takes its commitment's time (RevealWait's start) once a
	// majority did, which on a loaded machine may be after an advance of
	// the clock: advance again until it reveals.
	for i := 0; ; i++ {
		f.clock.Advance(10*time.Minute + time.Second)
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			if i < 2 {
				continue
			}
			t.Fatal("no reveal after three waits of 10 min on the client's clock")
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if tot := c.CommitTotals(); tot.Timeouts != 1 || tot.Waited < 10*time.Minute {
		t.Fatalf("%+v (want a reveal after the wait)", tot)
	}
	f.net.FlushAll(ctx)
	if rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 1 || rep.Reveals.Checked != 1 || rep.Reveals.Refused != 0 {
		t.Fatalf("harvest: %+v %v", rep, err)
	}
}

// TestCommitRevealCost reports what commit–reveal costs per job: units of
// two copies, one at a time, each run by two clients side by side on the
// real clock, once with commit–reveal and once without, then harvested.
// Run with -v:
//
//	go test ./project/ -run TestCommitRevealCost -v
func TestCommitRevealCost(t *testing.T) {
	const units = 6
	for _, commit := range []bool{false, true} {
		f := startFlow(t, 8, 80)
		ctx := context.Background()
		clients := []*client.Client{f.realClockCommitter(t, "honest1"), f.realClockCommitter(t, "honest2")}
		var took time.Duration
		for i := range units {
			file := fmt.Sprintf("app: hashchain\nargs: [\"20000\", \"%d\"]\nkeywords: [lhc]\ncopies: 2\n", i)
			if commit {
				file += "commit: true\nreveal_wait: 1m\n"
			}
			if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), fmt.Sprintf("cost%d.yaml", i), nil); err != nil || rep.Submitted != 2 {
				t.Fatalf("submit: %+v %v", rep, err)
			}
			f.net.FlushAll(ctx)
			start := time.Now()
			done := []<-chan error{f.runOne(clients[0]), f.runOne(clients[1])}
			for _, ch := range done {
				if err := await(t, ch); err != nil {
					t.Fatal(err)
				}
			}
			took += time.Since(start)
		}
		f.net.FlushAll(ctx)
		rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
		if err != nil || rep.Recorded != 2*units || rep.Decided != units {
			t.Fatalf("harvest: %+v %v", rep, err)
		}
		if !commit {
			t.Logf("without commit–reveal: a unit's two copies run side by side in %v (mean of %d)", (took / units).Round(time.Millisecond), units)
			continue
		}
		var tot client.CommitTotals
		for _, c := range clients {
			ct := c.CommitTotals()
			tot.Jobs, tot.RPCs, tot.Bytes, tot.Lookups = tot.Jobs+ct.Jobs, tot.RPCs+ct.RPCs, tot.Bytes+ct.Bytes, tot.Lookups+ct.Lookups
			tot.Waited, tot.Timeouts = tot.Waited+ct.Waited, tot.Timeouts+ct.Timeouts
		}
		if tot.Jobs != 2*units || tot.Timeouts != 0 || rep.Reveals.Checked != 2*units || rep.Reveals.Refused != 0 {
			t.Fatalf("client totals %+v, harvest %+v", tot, rep.Reveals)
		}
		n := float64(tot.Jobs)
		t.Logf("with commit–reveal: a unit's two copies run side by side in %v (mean of %d)", (took / units).Round(time.Millisecond), units)
		t.Logf("client, per job: %.1f RPCs, %.0f bytes, %.1f board lookups, %v from commitment to reveal (mean; poll every %v)",
			float64(tot.RPCs)/n, float64(tot.Bytes)/n, float64(tot.Lookups)/n, (tot.Waited / time.Duration(tot.Jobs)).Round(time.Millisecond), commitPoll)
		t.Logf("project, per job: %.1f RPCs, %.0f bytes (%d boards asked for %d results)",
			float64(rep.Reveals.RPCs)/n, float64(rep.Reveals.Bytes)/n, rep.Reveals.Boards, rep.Reveals.Checked)
	}
}
