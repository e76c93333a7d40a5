package bench

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
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
)

// setUp starts the network, the project, its ledger and the clients'
// agents, each closed by tearDown, and logs how long they took.
func (r *benchRun) setUp(ctx context.Context) error {
	o := r.o
	setup := time.Now()
	net, err := testnet.Start(ctx, benchNetworkOptions(o))
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
func benchNetworkOptions(o Options) testnet.Options {
	opts := testnet.Options{Nodes: o.Nodes, Transport: testnet.TCP, Dir: o.Dir, Seed: o.Seed, PoolLoops: true,
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

// startClients starts a client.Client on each of the clients' agents,
// its goroutines labelled party=client; tearDown, or stop, stops them.
func (r *benchRun) startClients(ctx context.Context) error {
	runCtx, stopClients := context.WithCancel(ctx)
	r.stopClients = stopClients
	r.onTearDown(stopClients)
	for i, a := range r.agents {
		if err := r.startClient(runCtx, i, a); err != nil {
			return err
		}
	}
	return nil
}

// startClient starts the i-th client: a client.Client whose executor runs
// the application in this process (ExecInProcess) or starts it through
// the launcher (ExecSubprocess). The nodes' per-client limits are off, so
// the client does not pace itself; its warnings are the run's errors.
func (r *benchRun) startClient(ctx context.Context, i int, a *agent.Agent) error {
	o := r.o
	var exec client.Executor = inProcess{}
	if o.Exec == ExecSubprocess {
		rn, err := runner.New(runner.Config{Launcher: o.Launcher, Env: o.LauncherEnv, WorkRoot: filepath.Join(o.Dir, fmt.Sprintf("work%d", i+1)),
			Allow: map[string][]string{benchProject: {App}}})
		if err != nil {
			return fmt.Errorf("client worker%d's runner: %w", i+1, err)
		}
		exec = rn
	}
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: benchProject, Share: 1}}, Runner: exec, Slots: o.Slots, ClaimMany: o.ClaimMany,
		Attributes: client.Attributes{OS: runtime.GOOS, Arch: runtime.GOARCH}, // memory unknown: no class ruled out
		BackoffMin: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Pace: -1, Seed: o.Seed + uint64(i),
		OnClaim: r.claimTimed, Logger: slog.New(warnings{add: r.addErr})})
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

// claimTimed adds one claim's time to claimTimes.
func (r *benchRun) claimTimed(d time.Duration) {
	r.claimMu.Lock()
	r.claimTimes.add(d)
	r.claimMu.Unlock()
}
