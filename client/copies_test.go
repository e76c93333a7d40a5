package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestTwoClientsCopies (issue 16): two one-slot clients and units of two
// copies each, so every unit needs both clients. Every job finishes, no
// client claims a copy of a unit it already ran (none is released for
// that reason), no node refuses a client for its rate, and completions
// never stall: the clients do not back off for long while work is listed.
func TestTwoClientsCopies(t *testing.T) {
	units := 60
	if testing.Short() {
		units = 30
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 8, Dir: t.TempDir(), Seed: 71, PoolLoops: true})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	// copies: 2 of each unit, submitted side by side as a batch does
	testnet.SubmitJobs(t, p, 2*units, testnet.Jobs{Args: func(i int) []string { return []string{"1000", fmt.Sprint(i / 2)} }})
	net.FlushAll(ctx)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var clients []*client.Client
	var logs []*errLog
	for _, name := range []string{"alice", "bob"} {
		a, err := net.NewAgent(ctx, certs.RoleClient, name)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		l := &errLog{}
		c, err := client.New(client.Config{
			Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
			Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 1, Logger: slog.New(l),
		})
		if err != nil {
			t.Fatal(err)
		}
		clients, logs = append(clients, c), append(logs, l)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Run(runCtx)
		}()
	}
	// Watch the completions: the longest time without one.
	want := 2 * units
	start := time.Now()
	last, longest, done := start, time.Duration(0), 0
	deadline := start.Add(90 * time.Second)
	for done < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		if n := doneSum(clients); n != done {
			now := time.Now()
			longest = max(longest, now.Sub(last))
			last, done = now, n
		}
	}
	if done < want {
		longest = max(longest, time.Since(last))
	}
	stop()
	wg.Wait()
	sameUnit, limited := 0, 0
	for _, l := range logs {
		s, r := l.counts()
		sameUnit += s
		limited += r
	}
	t.Logf("%d of %d jobs done in %v; longest stall %v; %d copies of a unit run claimed and released; %d rate-limit refusals",
		done, want, time.Since(start).Round(time.Millisecond), longest.Round(time.Millisecond), sameUnit, limited)
	if done != want {
		t.Errorf("%d of %d jobs done", done, want)
	}
	if sameUnit != 0 {
		t.Errorf("%d copies of a unit already run were claimed and released", sameUnit)
	}
	if limited != 0 {
		t.Errorf("%d requests refused for the client's rate", limited)
	}
	if bound := stallBound(time.Since(start), done); longest > bound {
		t.Errorf("no job completed for %v while work was listed (bound %v)", longest.Round(time.Millisecond), bound.Round(time.Millisecond))
	}
}

// stallBound is the longest time without a completion the copies test
// accepts, for done completions in elapsed: 2 s (two one-second backoffs
// at most, BackoffMin) plus two mean gaps between completions, so that a
// machine or race detector that runs every job slower does not read as a
// client backing off, while a backoff grown to 4 s still fails a run at
// this machine's usual pace (~30 ms a job; ~0.6 s under -race).
func stallBound(elapsed time.Duration, done int) time.Duration {
	return 2*time.Second + 2*elapsed/time.Duration(max(done, 1))
}

// errLog is a slog handler that counts the errors a client logs: claims
// released as copies of a unit it ran, and nodes' rate-limit refusals.
type errLog struct {
	mu               sync.Mutex
	sameUnit, limits int
}

func (l *errLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *errLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		err, ok := a.Value.Any().(error)
		if !ok {
			return true
		}
		var we *wire.Error
		l.mu.Lock()
		defer l.mu.Unlock()
		if r.Message == "job released" && errors.Is(err, client.ErrSameUnit) {
			l.sameUnit++
		}
		if errors.As(err, &we) && we.Status == wire.StatusRateLimited {
			l.limits++
		}
		return true
	})
	return nil
}

func (l *errLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errLog) WithGroup(string) slog.Handler      { return l }

func (l *errLog) counts() (sameUnit, limits int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sameUnit, l.limits
}

// TestClientPacesItself (issue 16): a client whose claims all fail at once
// (the jobs listed are claimed by another, their entries not withdrawn
// yet) goes from entry to entry at full speed; it paces its queries and
// claim requests under the nodes' per-client limits, and no node refuses
// it for its rate.
func TestClientPacesItself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 8, Dir: t.TempDir(), Seed: 72})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	const jobs = 80
	keys := submitJobs(t, p, jobs, "hashchain")
	net.FlushAll(ctx) // listed; the claims below are not withdrawn (no writer loops)
	rival, err := net.NewAgent(ctx, certs.RoleClient, "rival")
	if err != nil {
		t.Fatal(err)
	}
	defer rival.Close()
	cl := claimclient.NewClaimer(rival.Endpoint(), rival.DHT(), nil, 0)
	paces := map[peer.ID]*rate.Limiter{} // the rival keeps under the limits
	cl.SetPace(func(ctx context.Context, n peer.ID) error {
		if paces[n] == nil {
			paces[n] = rate.NewLimiter(15, 15)
		}
		return paces[n].Wait(ctx)
	})
	for _, k := range keys {
		if _, err := cl.Claim(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	a, err := net.NewAgent(ctx, certs.RoleClient, "eager")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
		Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	limited, cycles := 0, 0
	start := time.Now()
	for ; cycles < 2*jobs; cycles++ {
		ran, err := c.RunOne(ctx, "lhc")
		var we *wire.Error
		if errors.As(err, &we) && we.Status == wire.StatusRateLimited {
			limited++
		}
		if ran || errors.Is(err, indexclient.ErrNoJob) {
			break
		}
	}
	t.Logf("%d cycles in %v, %d refused for the rate; claims %+v", cycles, time.Since(start).Round(time.Millisecond), limited, c.Status().Claims)
	if limited != 0 {
		t.Errorf("%d cycles refused for the client's rate", limited)
	}
	if lost := c.Status().Claims.Lost; lost < jobs/2 {
		t.Errorf("only %d claims tried and lost of %d listed jobs", lost, jobs)
	}
}
