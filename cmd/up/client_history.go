package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/client"
)

func newClientHistoryCmd() *cobra.Command {
	var fl clientAPIFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List a running client's latest finished jobs",
		Long: `List a running client's latest finished jobs (up to 100, newest first):
project, application, outcome (done: result submitted; failed: ran, its
result not delivered; released: given back before it ran, and why), when,
elapsed and CPU time.`,
		Example: `  up client history --http 127.0.0.1:8050
  up client history --http 127.0.0.1:8050 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientGet(cmd.OutOrStdout(), fl, "/api/history", asJSON, printHistory)
		},
	}
	bindClientAPIFlags(cmd.Flags(), &fl)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the history as JSON")
	return cmd
}

// printHistory writes a client's history as text.
func printHistory(w io.Writer, h client.History) error {
	if len(h.Jobs) == 0 {
		fmt.Fprintln(w, "no job finished yet")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINISHED\tPROJECT\tAPP\tOUTCOME\tELAPSED\tCPU\tJOB")
	for _, j := range h.Jobs {
		out := j.Outcome
		if j.Reason != "" && j.Outcome != "done" {
			out += ": " + j.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f s\t%.1f s\t%s\n", j.Finished.Format("15:04:05"), j.Project, j.App, out, j.Elapsed, j.CPU, shortJob(j.Job))
	}
	return tw.Flush()
}
