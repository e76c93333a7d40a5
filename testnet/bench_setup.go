package testnet

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
)

// setUp starts the network, the project, its ledger and the clients'
// agents, each closed by tearDown, and logs how long they took.
func (r *benchRun) setUp(ctx context.Context) error {
	o := r.o
	setup := time.Now()
	net, err := Start(ctx, benchNetworkOptions(o))
	if err != nil {
		return fmt.Errorf("start the network: %w", err)
	}
	r.net = net
	r.onTearDown(func() { net.Close() })
	p, err := net.NewProject(ctx, benchProject)
	if err != nil {
		return fmt.Errorf("start the project: %w", err)
	}
	r.p = p
	projectAgent := p.Agent()
	r.onTearDown(func() { projectAgent.Close() })
	ledger, err := project.OpenLedger(filepath.Join(o.Dir, "ledger.db"))
	if err != nil {
		return err
	}
	r.ledger = ledger
	r.onTearDown(func() { ledger.Close() })
	r.agents = make([]*agent.Agent, o.Clients)
	for i := range r.agents {
		a, err := net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("worker%d", i+1))
		if err != nil {
			return fmt.Errorf("start client worker%d: %w", i+1, err)
		}
		r.agents[i] = a
		r.onTearDown(func() { a.Close() })
	}
	r.logf("%d nodes (r = %d), a project and %d clients × %d slots up on loopback TCP in %s", o.Nodes, o.R, o.Clients, o.Slots,
		time.Since(setup).Round(time.Millisecond))
	return nil
}

// benchNetworkOptions are the bench's network: o.Nodes nodes on loopback
// TCP with their pool loops, replication o.R, no per-client rate limits,
// and the periods scaled with o.TCollect when set.
func benchNetworkOptions(o BenchOptions) Options {
	opts := Options{Nodes: o.Nodes, Transport: TCP, Dir: o.Dir, Seed: o.Seed, PoolLoops: true,
		Configure: func(_ int, cfg *node.Config) {
			// Per-client rate limits defend a node; the bench measures
			// capacity, so they are out of the way.
			cfg.Claim.Limit, cfg.Claim.Burst = 1e9, 1<<30
			if o.TCollect > 0 {
				// The production periods scaled with T_collect (2 h):
				// republish every 25 ± 5 min, replica expiry 1 h, so
				// replicas still converge before collected jobs go.
				cfg.Pool.TCollect = o.TCollect
				cfg.Pool.ExpiryInterval = min(o.TCollect/4, 10*time.Second)
				cfg.Pool.RepublishInterval, cfg.Pool.RepublishJitter = o.TCollect*25/120, o.TCollect*5/120
				cfg.Pool.ReplicaExpiry = o.TCollect / 2
			}
		}}
	opts.DHT.Replication = o.R
	opts.Adversary = o.Adversary
	opts.Index.Server.QueryLimit, opts.Index.Server.QueryBurst = 1e9, 1<<30
	if o.TCollect > 0 {
		opts.IndexWriter.BackupDelay = o.TCollect * 10 / 120 // 10 min of 2 h
	}
	if o.BackupDelay > 0 {
		opts.IndexWriter.BackupDelay = o.BackupDelay
	}
	return opts
}

// startClients starts a client on each of the clients' agents, its
// goroutines labelled party=client; tearDown, or stop, stops them.
func (r *benchRun) startClients(ctx context.Context) error {
	runCtx, stopClients := context.WithCancel(ctx)
	r.stopClients = stopClients
	r.onTearDown(stopClients)
	attrs := client.Attributes{OS: runtime.GOOS, Arch: runtime.GOARCH} // as client.New fills them; memory unknown
	for i, a := range r.agents {
		if r.o.Exec == ExecSubprocess {
			if err := r.startSubprocessClient(runCtx, i, a); err != nil {
				return err
			}
			continue
		}
		r.startWorker(runCtx, a, attrs)
	}
	return nil
}

// startSubprocessClient starts the i-th client as a client.Client whose
// runner starts the application through the launcher.
func (r *benchRun) startSubprocessClient(ctx context.Context, i int, a *agent.Agent) error {
	o := r.o
	rn, err := runner.New(runner.Config{Launcher: o.Launcher, Env: o.LauncherEnv, WorkRoot: filepath.Join(o.Dir, fmt.Sprintf("work%d", i+1)),
		Allow: map[string][]string{benchProject: {BenchApp}}})
	if err != nil {
		return fmt.Errorf("client worker%d's runner: %w", i+1, err)
	}
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: benchProject, Share: 1}}, Runner: rn, Slots: o.Slots,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Seed: o.Seed + uint64(i),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("client worker%d: %w", i+1, err)
	}
	r.cls = append(r.cls, c)
	r.wg.Add(1)
	go pprof.Do(ctx, pprof.Labels("party", "client"), func(ctx context.Context) {
		defer r.wg.Done()
		_ = c.Run(ctx)
	})
	return nil
}

// startWorker starts an in-process bench worker on the agent, one
// goroutine a slot, each adding its claims' times to claimTimes.
func (r *benchRun) startWorker(ctx context.Context, a *agent.Agent, attrs client.Attributes) {
	w := &benchWorker{a: a, claimer: claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0), query: client.QueryFor(benchProject, attrs),
		units: map[string]bool{}}
	w.claimer.SetSigner(a.Identity().Key)
	r.ws = append(r.ws, w)
	for range r.o.Slots {
		r.wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("party", "client"), func(ctx context.Context) {
			defer r.wg.Done()
			w.loop(ctx, r.claimTimed)
		})
	}
}

// claimTimed adds one claim's time to claimTimes.
func (r *benchRun) claimTimed(d time.Duration) {
	r.claimMu.Lock()
	r.claimTimes = append(r.claimTimes, d)
	r.claimMu.Unlock()
}
