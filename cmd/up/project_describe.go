package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/project"
)

func newProjectDescribeCmd() *cobra.Command {
	var conn projectConn
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe JOB|UNIT",
		Short: "Say why a job (or each job of a unit) is not running",
		Long: `Describe asks the job's r closest nodes what they hold of it (state,
claim, results, the releases clients sent with their reasons) and the index
nodes of each of its keywords' regions whether they list it, how often they
served it, the declines clients sent with their reasons, and how often
clients queried the keyword; then it gives a verdict: why the job does not
run and what would make it run. JOB is a job's CID, UNIT a unit's number in
the ledger (a description shows it). Every answer is a node's word, and
every reason a client's, named as such; describing changes nothing.`,
		Example: `  up project describe --data lhc --bootstrap-file boot.txt bafyreicqi6o3imldasjoulynmk7n5fyd4smajdsnvwq2blmx3xpkaolqcu
  up project describe --data lhc --bootstrap-file boot.txt 12 --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("want one JOB (a CID) or UNIT (a number), got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p, l, done, err := conn.open(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			d, err := p.Describe(ctx, l, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			writeDescription(cmd.OutOrStdout(), d)
			return nil
		},
	}
	conn.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// writeDescription prints a description: per job a header, its replicas'
// answers, its index nodes' answers and the verdict.
func writeDescription(w io.Writer, d *project.Description) {
	for i, jd := range d.Jobs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "job %s (unit %d, copy %d): %s in the ledger, application %s, keywords %s\n",
			jd.Job, jd.Unit, jd.Copy, jd.LedgerState, jd.App, strings.Join(jd.Keywords, ", "))
		fmt.Fprintf(w, "\nits %d closest nodes say:\n", jd.Replication)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE\tSTATE\tCLAIMANT\tCLAIM AGE\tRESULTS\tRELEASES\tLATEST REASONS")
		for _, a := range jd.Replicas {
			if a.Error != "" {
				fmt.Fprintf(tw, "  %s\t%s\t\t\t\t\t\n", shortNode(a.Node), a.Error)
				continue
			}
			state := a.State
			if !a.Held {
				state = "not held"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%s\n", shortNode(a.Node), state, a.Claimant, age(a.ClaimAgeS, a.Claimant != ""),
				a.Results, a.Releases, noteSummary(a.Notes))
		}
		tw.Flush()
		fmt.Fprintln(w, "\nits index nodes say:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  KEYWORD\tNODE\tLISTED\tSERVED\tQUERIES\tLAST QUERY\tDECLINES\tLATEST REASONS")
		for _, a := range jd.Index {
			if a.Error != "" {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t\t\t\t\t\n", a.Keyword, shortNode(a.Node), a.Error)
				continue
			}
			listed := fmt.Sprint(a.Listed)
			if a.Quarantined {
				listed = "quarantined"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n", a.Keyword, shortNode(a.Node), listed, a.Served, a.Queries,
				age(a.LastQueryS, a.LastQueryS >= 0), a.Declines, noteSummary(a.Notes))
		}
		tw.Flush()
		fmt.Fprintln(w, "\nverdict:")
		for _, r := range jd.Verdict {
			fmt.Fprintf(w, "  - %s\n", r.Why)
			if r.Fix != "" {
				fmt.Fprintf(w, "    → %s\n", r.Fix)
			}
		}
	}
}

// shortNode is a peer ID's last 8 characters ("?" for none).
func shortNode(id string) string {
	if id == "" {
		return "?"
	}
	return "…" + id[max(0, len(id)-8):]
}

// age prints seconds ago, or "-" when there is none.
func age(s float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0fs ago", s)
}

// noteSummary counts notes by reason: "not-allowed ×3, same-unit ×1".
func noteSummary(ns []project.Note) string {
	n, order := map[string]int{}, []string{}
	for _, x := range ns {
		if n[x.Code] == 0 {
			order = append(order, x.Code)
		}
		n[x.Code]++
	}
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s ×%d", c, n[c])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
