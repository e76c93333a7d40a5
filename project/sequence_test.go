package project_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
)

// stepRunner runs a sequence's steps with the real runner, records the
// steps it ran, and stalls at step stall (0: never) until its context
// ends: a client that dies in the middle of a step.
type stepRunner struct {
	client.Executor
	stall   int
	stalled chan struct{}
	tick    func() // called after each step run (nil: none)
	mu      sync.Mutex
	steps   []int
}

func (s *stepRunner) Run(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	step, _ := strconv.Atoi(t.Args[len(t.Args)-1])
	if step == s.stall {
		close(s.stalled)
		<-ctx.Done()
		return runner.Outcome{}, ctx.Err()
	}
	out, err := s.Executor.Run(ctx, t)
	if s.tick != nil {
		s.tick()
	}
	if err == nil && out.ExitCode == 0 {
		s.mu.Lock()
		s.steps = append(s.steps, step)
		s.mu.Unlock()
	}
	return out, err
}

func (s *stepRunner) ran() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.steps...)
}

// seqWorker is a client of the flow's network running steps with s.
func (f *flow) seqWorker(t *testing.T, name string, s *stepRunner) (*client.Client, func()) {
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
	s.Executor = r
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: s, Slots: 1, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() { a.Close() }
}

const seqFile = `
app: hashseq
args: ["1000", "climate"]
keywords: [lhc]
t_finish: 10m
steps: 20
`

// seqSteps is how many steps the sequence has.
const seqSteps = 20

// submitSequence submits seqFile and returns its one job's key.
func (f *flow) submitSequence(t *testing.T) []byte {
	t.Helper()
	ctx := context.Background()
	if _, err := f.proj.SubmitFile(ctx, f.ledger, []byte(seqFile), "seq.yaml", nil); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for _, nd := range f.net.Live() {
		keys = append(keys, nd.Pool().Keys()...)
	}
	if len(keys) == 0 {
		t.Fatal("the sequence is held nowhere")
	}
	f.net.FlushAll(ctx)
	return keys[0]
}

// checkpointStep is the newest checkpoint's step each holder of key has.
func (f *flow) checkpointSteps(key []byte) []int {
	var out []int
	for _, i := range f.net.Holders(key) {
		b, _ := f.net.Node(i).Pool().Checkpoint(key)
		step := 0
		if c, err := job.DecodeCheckpoint(b); err == nil {
			step = int(c.Step)
		}
		out = append(out, step)
	}
	return out
}

// wantChain is the hashseq checkpoint of the whole sequence, computed
// here.
func wantChain(t *testing.T) string { return chainOf(t, seqSteps) }

// TestSequenceMovesOnKill: a 20-step sequence runs in order on client A;
// A dies in step 8 (its agent closed: it releases nothing); the claim
// lapses on each replica T_finish + T_skew after the checkpoint of step 7
// reached it, on its own clock (two replicas' clocks are skewed by ±5
// min); client B claims the sequence, resumes from step 7's checkpoint
// (signed by A) and finishes it; the ledger's result holds all 20 steps
// in order, equal to the chain computed here.
func TestSequenceMovesOnKill(t *testing.T) {
	f := startFlow(t, 8, 97)
	ctx := context.Background()
	key := f.submitSequence(t)
	holders := f.net.Holders(key)
	f.net.SetClockOffset(holders[0], 5*time.Minute)
	f.net.SetClockOffset(holders[len(holders)-1], -5*time.Minute)

	// Each step takes 5 min of the test clock: 7 steps outlast the
	// claim's first deadline and its T_skew (10 + 20 min), which only the
	// checkpoints' renewals keep.
	step := func() { f.clock.Advance(5 * time.Minute) }
	ra := &stepRunner{stall: 8, stalled: make(chan struct{}), tick: step}
	a, closeA := f.seqWorker(t, "volunteerA", ra)
	runCtx, kill := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := a.RunOne(runCtx, "lhc")
		done <- err
	}()
	select {
	case <-ra.stalled:
	case err := <-done:
		t.Fatalf("client A ended before step 8: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("client A did not reach step 8: ran %v", ra.ran())
	}
	if got := fmt.Sprint(ra.ran()); got != "[1 2 3 4 5 6 7]" {
		t.Fatalf("client A ran steps %s before step 8", got)
	}
	if steps := f.checkpointSteps(key); strings.Count(fmt.Sprint(steps), "7") < 3 {
		t.Fatalf("replicas' checkpoint steps %v, want 7 on a majority", steps)
	}
	closeA()
	kill()
	<-done
	if st, _ := f.net.Node(holders[1]).Pool().State(key); st.Phase != job.Claimed {
		t.Fatalf("after the kill the job is %s, want still claimed (a dead client releases nothing)", st.Phase)
	}
	f.clock.Advance(10*time.Minute + time.Duration(claim.DefaultTSkew)*time.Millisecond + 6*time.Minute)
	for _, i := range holders {
		_, _ = f.net.Node(i).Pool().ExpireNow()
		if st, _ := f.net.Node(i).Pool().State(key); st.Phase != job.Ready {
			t.Fatalf("replica %d: job %s after the step deadline, want ready", i, st.Phase)
		}
	}
	f.net.FlushAll(ctx)

	rb := &stepRunner{tick: step}
	b, _ := f.seqWorker(t, "volunteerB", rb)
	if ran, err := b.RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("client B: ran %v, %v", ran, err)
	}
	if got := fmt.Sprint(rb.ran()); got != "[8 9 10 11 12 13 14 15 16 17 18 19 20]" {
		t.Fatalf("client B ran steps %s, want 8..20 (resumed from step 7)", got)
	}
	f.net.FlushAll(ctx)
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("harvest: %+v %v", rep, err)
	}
	var out []byte
	var who string
	if err := f.ledger.DB().QueryRow(`SELECT output, client FROM results`).Scan(&out, &who); err != nil {
		t.Fatalf("the ledger has no result: %v", err)
	}
	if string(out) != wantChain(t) {
		t.Fatalf("result output:\n%s\nwant the 20-step chain:\n%s", out, wantChain(t))
	}
	t.Logf("20 steps: 1..7 on %s, 8..20 on %s; result by %s, %d bytes", "volunteerA", "volunteerB", who, len(out))
}

// TestTrickleCreditWhileRunning: a sequence's client stalls in step 5;
// the project's trickle harvest finds the job under "lhc:trickle",
// records steps 1..4 with their partial credit while the job is still
// claimed, and tells the replicas, which drop the trickles and withdraw
// the entry: a second harvest lists nothing.
func TestTrickleCreditWhileRunning(t *testing.T) {
	f := startFlow(t, 8, 98)
	ctx := context.Background()
	key := f.submitSequence(t)
	ra := &stepRunner{stall: 5, stalled: make(chan struct{})}
	a, closeA := f.seqWorker(t, "volunteer", ra)
	runCtx, kill := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := a.RunOne(runCtx, "lhc")
		done <- err
	}()
	defer func() { closeA(); kill(); <-done }()
	select {
	case <-ra.stalled:
	case err := <-done:
		t.Fatalf("client ended before step 5: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("client did not reach step 5: ran %v", ra.ran())
	}
	f.net.FlushAll(ctx)
	rep, err := f.proj.HarvestTrickles(ctx, f.ledger, 64)
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("trickle harvest: %+v %v", rep, err)
	}
	c, _ := job.ParseKey(key)
	ts, err := f.ledger.Trickles(c.String())
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	credit := 0.0
	for _, tr := range ts {
		steps = append(steps, tr.Step)
		credit += tr.Credit
	}
	if rep.Listed != 1 || rep.Recorded != 4 || fmt.Sprint(steps) != "[1 2 3 4]" || credit <= 0 {
		t.Fatalf("trickle harvest %+v, steps %v, credit %v: want 1 job listed, steps 1..4 recorded with credit", rep, steps, credit)
	}
	for _, i := range f.net.Holders(key) {
		if st, _ := f.net.Node(i).Pool().State(key); st.Phase != job.Claimed {
			t.Fatalf("replica %d: job %s while its trickles were harvested, want claimed", i, st.Phase)
		}
	}
	t.Logf("trickles of steps %v by %s, credit %.2f, while the job runs", steps, ts[0].Client, credit)
	f.net.FlushAll(ctx)
	if rep, err := f.proj.HarvestTrickles(ctx, f.ledger, 64); err != nil || rep.Listed != 0 || rep.Recorded != 0 {
		t.Fatalf("second trickle harvest: %+v %v, want nothing listed (collected)", rep, err)
	}
}
