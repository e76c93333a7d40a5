package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/testnet"
)

// lookupFlags are the flags of 'up testnet lookups'.
type lookupFlags struct {
	nodes     int
	keys      int
	transport string
	seed      uint64
	dir       string
	hold      bool
}

func (f *lookupFlags) options() (testnet.Options, error) {
	if f.nodes < 2 || f.nodes > 2000 {
		return testnet.Options{}, usageError{fmt.Errorf("--nodes %d out of 2..2000", f.nodes)}
	}
	if f.keys < 1 {
		return testnet.Options{}, usageError{fmt.Errorf("--keys %d must be positive", f.keys)}
	}
	var tr testnet.Transport
	switch f.transport {
	case "tcp":
		tr = testnet.TCP
	case "mocknet":
		tr = testnet.Mocknet
	default:
		return testnet.Options{}, usageError{fmt.Errorf("--transport %q: want tcp or mocknet", f.transport)}
	}
	return testnet.Options{Nodes: f.nodes, Transport: tr, Seed: f.seed, Dir: f.dir}, nil
}

func newTestnetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testnet",
		Short: "In-process test networks and measurements",
	}
	fl := lookupFlags{nodes: 16, keys: 100, transport: "tcp", seed: 1}
	lookups := &cobra.Command{
		Use:   "lookups",
		Short: "Start N nodes in this process and check their closest-r lookups",
		Long: `Starts a test CA and N real nodes, checks that every node's closest-r
lookups find the true closest nodes and that cached lookups cost no RPC,
and prints the figures (or keeps running with --hold).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := fl.options()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if opts.Dir == "" {
				dir, err := os.MkdirTemp("", "up-testnet-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				opts.Dir = dir
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			start := time.Now()
			net, err := testnet.Start(ctx, opts)
			if err != nil {
				return err
			}
			defer net.Close()
			fmt.Fprintf(out, "%d nodes (%s) up in %s\n", opts.Nodes, fl.transport, time.Since(start).Round(time.Millisecond))
			rep, err := net.CheckLookups(ctx, fl.keys, fl.seed, bar(cmd.ErrOrStderr(), false, "lookups: nodes"))
			if err != nil {
				return err
			}
			fmt.Fprintln(out, rep)
			if fl.hold {
				for _, nd := range net.Live() {
					fmt.Fprintf(out, "%s %s\n", nd.Name(), nd.Addrs()[0])
				}
				fmt.Fprintln(out, "holding; interrupt to stop")
				<-ctx.Done()
			}
			return nil
		},
	}
	f := lookups.Flags()
	f.IntVar(&fl.nodes, "nodes", fl.nodes, "number of nodes")
	f.IntVar(&fl.keys, "keys", fl.keys, "random keys each node looks up")
	f.StringVar(&fl.transport, "transport", fl.transport, "tcp (full stack on loopback) or mocknet (in memory)")
	f.Uint64Var(&fl.seed, "seed", fl.seed, "seed of identities and keys, so a run replays")
	f.StringVar(&fl.dir, "dir", "", "directory for the CA and node data (default: a temporary one, removed after)")
	f.BoolVar(&fl.hold, "hold", false, "keep the network running until interrupted")
	cmd.AddCommand(lookups, newTestnetInitCmd(), newTestnetSimCmd(), newTestnetRunCmd())
	return cmd
}
