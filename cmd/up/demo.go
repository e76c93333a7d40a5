package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/testnet/demo"
)

// demoFlags are the flags of 'up demo'.
type demoFlags struct {
	nodes, clients, tiles, copies int
	dir, image                    string
	seed                          uint64
}

func (f *demoFlags) check() error {
	switch {
	case f.nodes < 5 || f.nodes > 200:
		return usageError{fmt.Errorf("--nodes %d out of 5..200 (r = 5)", f.nodes)}
	case f.clients < 1 || f.clients > 64:
		return usageError{fmt.Errorf("--clients %d out of 1..64", f.clients)}
	case f.tiles < 1 || f.tiles > 64:
		return usageError{fmt.Errorf("--tiles %d out of 1..64", f.tiles)}
	case f.copies < 1 || f.copies > 4:
		return usageError{fmt.Errorf("--copies %d out of 1..4", f.copies)}
	case f.copies > f.clients:
		return usageError{fmt.Errorf("--copies %d needs at least as many clients (got %d): copies must come from different clients", f.copies, f.clients)}
	}
	return nil
}

func newDemoCmd() *cobra.Command {
	fl := demoFlags{nodes: 8, clients: 4, tiles: 8, copies: 2, seed: 1}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a whole U.P. network in one process: CA, nodes, a project, volunteers",
		Long: `Starts in this process a test CA, nodes on loopback TCP (full libp2p stack),
a project and volunteer clients. The project uploads its application, the
built-in applications compiled to one WebAssembly module, into the overlay
once, submits the tiles of a Mandelbrot image with redundant copies and
goes offline; the volunteers find and claim the tiles, fetch the module
from the nodes and compute the tiles in the sandbox; the project, started
again, harvests, validates each tile by quorum, grants credit and
assembles the image.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fl.check(); err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the up binary: %w", err)
			}
			dir := fl.dir
			if dir == "" {
				if dir, err = os.MkdirTemp("", "up-demo-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			}
			image := fl.image
			if image == "" {
				image = "mandelbrot.png"
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			rep, err := demo.Run(ctx, demo.Options{
				Nodes: fl.nodes, Clients: fl.clients, Tiles: fl.tiles, Copies: fl.copies, Dir: dir, Image: image,
				Launcher: []string{self, "app", "exec"}, Seed: fl.seed, Log: out,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\n%d tiles × %d copies = %d jobs on %d nodes by %d volunteers in %s; %.1f RPCs served per job\n",
				rep.Units, fl.copies, rep.Jobs, rep.Nodes, rep.Clients, rep.Elapsed.Round(time.Millisecond), rep.RPCsPerJob)
			b := rep.Blobs
			fmt.Fprintf(out, "application: one WebAssembly module of %d bytes, uploaded once (%d bytes sent; %d × r = %d without the overlay's placement), fetched by the volunteers from the nodes\n",
				b.Bytes, b.Uploaded, b.Bytes, b.Bytes*int64(b.Replication))
			fmt.Fprintf(out, "image: %s\ncredit (valid results):\n", rep.Image)
			for _, c := range rep.Credit {
				fmt.Fprintf(out, "  %-12s %4d valid  %3d invalid  %s CPU\n", c.Client, c.Valid, c.Invalid, c.CPU.Round(time.Millisecond))
			}
			fmt.Fprintf(out, "credit as anyone can check it (the project's signed receipts, gathered from each volunteer's credit nodes and verified):\n")
			for _, v := range rep.Receipts {
				fmt.Fprintf(out, "  %-12s %4d credit  from %d nodes  %d receipts rejected\n", v.Client, v.Total, v.Nodes, v.Rejected)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.nodes, "nodes", fl.nodes, "number of nodes")
	f.IntVar(&fl.clients, "clients", fl.clients, "number of volunteer clients")
	f.IntVar(&fl.tiles, "tiles", fl.tiles, "tiles per side of the image")
	f.IntVar(&fl.copies, "copies", fl.copies, "redundant copies of each tile")
	f.StringVar(&fl.dir, "dir", "", "directory for the CA, nodes and ledger (default: a temporary one, removed after)")
	f.StringVar(&fl.image, "image", "", "where to write the assembled image (default mandelbrot.png)")
	f.Uint64Var(&fl.seed, "seed", fl.seed, "seed of identities and choices, so a run replays")
	return cmd
}
