package testnet

import (
	"context"
	"fmt"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
)

// TB is what the fixtures need of a test; testing.TB has it. (Package
// testnet does not import testing: the up binary links it.)
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// fixtureTimeout bounds starting a fixture's network and project, and
// submitting its jobs.
const fixtureTimeout = 2 * time.Minute

// StartNetwork starts a network with opts for the test t, in a fresh
// temporary directory unless opts.Dir names one, and closes it when the
// test ends. It fails the test if the network does not start.
func StartNetwork(t TB, opts Options) *Network {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), fixtureTimeout)
	defer cancel()
	net, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start testnet: %v", err)
	}
	t.Cleanup(func() { net.Close() })
	return net
}

// Fixture is what most tests of the network's packages start from: a
// running network on a test clock and a project, "lhc", on it.
type Fixture struct {
	Net     *Network
	Clock   *Clock
	Project *project.Project
}

// StartFixture starts a network with opts on clock (a new one at the
// current time when nil; it replaces opts.Now) and the project "lhc",
// for the test t, and closes both when the test ends. It fails the test
// if either does not start.
func StartFixture(t TB, clock *Clock, opts Options) *Fixture {
	t.Helper()
	if clock == nil {
		clock = NewClock(time.Now())
	}
	opts.Now = clock.Now
	net := StartNetwork(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), fixtureTimeout)
	defer cancel()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatalf("start project: %v", err)
	}
	t.Cleanup(func() { p.Agent().Close() })
	return &Fixture{Net: net, Clock: clock, Project: p}
}

// Jobs describes the jobs SubmitJobs makes; the zero value is hashchain
// jobs numbered from 0, listed under the project's name, with an hour to
// finish.
type Jobs struct {
	App      string               // default "hashchain"
	Args     func(i int) []string // job i's arguments; default its number
	Keywords []string             // default the project's name
	TFinish  time.Duration        // default an hour
	// Commit, when not 0, is the commitments of a unit a copy waits for
	// before it reveals, at most RevealWait (job.Spec.Commit, RevealWait).
	Commit     uint16
	RevealWait time.Duration
	// Batch signs the jobs as one submission batch (Project.SignBatch),
	// which places them together (job.PlaceKey); else each is signed
	// alone and placed by its key.
	Batch bool
}

// SubmitJobs signs n jobs of p as jobs describes and submits them all at
// once, failing the test if any is refused; it returns their keys in
// order.
func SubmitJobs(t TB, p *project.Project, n int, jobs Jobs) [][]byte {
	t.Helper()
	if n == 0 {
		return nil
	}
	if jobs.App == "" {
		jobs.App = "hashchain"
	}
	if jobs.Args == nil {
		jobs.Args = func(i int) []string { return []string{fmt.Sprint(i)} }
	}
	if jobs.Keywords == nil {
		jobs.Keywords = []string{p.Name()}
	}
	if jobs.TFinish == 0 {
		jobs.TFinish = time.Hour
	}
	signed := make([]*project.Prepared, n)
	specs := make([]*job.Spec, n)
	for i := range signed {
		spec, err := p.NewSpec(jobs.App, jobs.Args(i), jobs.Keywords, jobs.TFinish)
		if err != nil {
			t.Fatal(err)
		}
		spec.Commit, spec.RevealWait = jobs.Commit, jobs.RevealWait.Milliseconds()
		spec.Version = spec.LeastVersion()
		specs[i] = spec
		if !jobs.Batch {
			if signed[i], err = p.Sign(spec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if jobs.Batch {
		var err error
		if signed, err = p.SignBatch(specs); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fixtureTimeout)
	defer cancel()
	keys := make([][]byte, n)
	for i, r := range p.Submit(ctx, signed) {
		if r.Err != nil {
			t.Fatalf("submit job %d: %v", i, r.Err)
		}
		keys[i] = signed[i].Key()
	}
	return keys
}
