package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/job"
)

func newProjectSequenceCmd() *cobra.Command {
	var conn projectConn
	var steps int
	cmd := &cobra.Command{
		Use:   "sequence JOB --steps N",
		Short: "End or extend a running sequence",
		Long: `Sequence orders the sequence JOB (its CID) to have N steps from now on:
fewer than it has ends it after step N (or after the newest checkpoint its
nodes hold, whichever is later), more extends it. The order is signed by
the project and sent to the job's closest nodes; the client running the
sequence learns it with its next step's checkpoint and stops, or goes on.
Decide from its trickles and results ('up project results').`,
		Example: `  up project sequence --data lhc --bootstrap-file boot.txt bafyrei… --steps 40`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("want one JOB (a CID), got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if steps < 1 || steps > job.MaxSteps {
				return usageError{fmt.Errorf("--steps %d out of 1..%d", steps, job.MaxSteps)}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p, l, done, err := conn.open(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			o, err := p.OrderSequence(ctx, l, args[0], uint16(steps))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sequence %s: %d of its %d nodes took the order; they now say %s steps\n",
				args[0], o.Took, o.Nodes, stepsList(o.Steps))
			return nil
		},
	}
	conn.add(cmd)
	cmd.Flags().IntVar(&steps, "steps", 0, "the sequence's steps from now on (required)")
	return cmd
}

// stepsList prints the step counts nodes answered.
func stepsList(ss []uint16) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += strconv.Itoa(int(s))
	}
	return out
}
