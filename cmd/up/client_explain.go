package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/client"
)

func newClientExplainCmd() *cobra.Command {
	var fl clientAPIFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Explain what a running client did lately and why: queries, jobs seen, skips",
		Long: `Explain what a running client did lately for each of its projects: whether
it is attached, paused or backing off, its debt and share, its latest
index queries (when, what, how many entries found or the error), and the
latest jobs it saw with what it decided: claimed (then done, failed or
released), lost to another client, or skipped and why (application not
allowed, copy of a unit it already ran, needs blobs, ...). A one-line
summary per project covers the last 5 minutes.`,
		Example: `  up client explain --http 127.0.0.1:8050
  up client explain --http 127.0.0.1:8050 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientGet(cmd.OutOrStdout(), fl, "/api/explain", asJSON, printExplanation)
		},
	}
	bindClientAPIFlags(cmd.Flags(), &fl)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the explanation as JSON")
	return cmd
}

// explainShown bounds the queries and jobs printed per project as text
// (--json has them all).
const explainShown = 10

// printExplanation writes a client's explanation as text.
func printExplanation(w io.Writer, ex client.Explanation) error {
	if ex.Paused {
		fmt.Fprintln(w, "client paused: it claims no job ('up client resume')")
	}
	if len(ex.Projects) == 0 {
		fmt.Fprintln(w, "no project")
	}
	for _, p := range ex.Projects {
		state := "attached"
		if !p.Attached {
			state = "detached"
		}
		fmt.Fprintf(w, "%s (%s, share %g, debt %+.1f s): %s\n", p.Name, state, p.Share, p.Debt, p.Summary)
		fmt.Fprintf(w, "  query: %s\n", p.Query)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if len(p.Queries) > 0 {
			fmt.Fprintln(tw, "  QUERIED\tFOUND\tERROR")
			for _, q := range p.Queries[:min(len(p.Queries), explainShown)] {
				fmt.Fprintf(tw, "  %s\t%d\t%s\n", q.At.Format("15:04:05"), q.Found, q.Error)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(p.Jobs) > 0 {
			fmt.Fprintln(tw, "  JOB\tAPP\tDECISION\tWHY\tAGO")
			for _, j := range p.Jobs[:min(len(p.Jobs), explainShown)] {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", shortJob(j.Job), j.App, j.Decision, j.Reason, seconds(j.Age))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// shortJob shortens a job CID for a table: its last 12 characters.
func shortJob(cid string) string {
	if len(cid) <= 14 {
		return cid
	}
	return "…" + cid[len(cid)-12:]
}
