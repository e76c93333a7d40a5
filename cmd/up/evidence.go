package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/node"
)

func newNodeEvidenceCmd() *cobra.Command {
	var addr, token string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Print the forged states a running node refused, by sender",
		Long: `Evidence asks a running node's HTTP API (up node run --http) for the
replicated states it refused because their proof was missing or forged:
when, who sent them (certificate name and peer), the job, the phase and
why. A CA operator reads it to decide which certificates to revoke. The
node keeps the last 1,000.`,
		Example: `  up node evidence --http 127.0.0.1:8040
  up node evidence --http 127.0.0.1:8040 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("http", addr); err != nil {
				return err
			}
			rep, err := fetchEvidence(nodeAPI{addr, apiTokenOr(token, os.Getenv)})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			return printEvidence(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "", "the node's HTTP API: host:port or http(s)://host:port (required)")
	cmd.Flags().StringVar(&token, "token", "", tokenHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as JSON")
	return cmd
}

// fetchEvidence gets a node's refused forgeries from its HTTP API.
func fetchEvidence(api nodeAPI) (node.EvidenceReport, error) {
	var rep node.EvidenceReport
	u, err := statusURL(api.addr)
	if err != nil {
		return rep, err
	}
	u = strings.TrimSuffix(u, "/status") + "/evidence"
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return rep, err
	}
	if api.token != "" {
		req.Header.Set("Authorization", "Bearer "+api.token)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return rep, fmt.Errorf("node evidence at %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return rep, fmt.Errorf("node evidence at %s: HTTP %s: give the API token (--token or $%s)", u, resp.Status, tokenEnv)
	}
	if resp.StatusCode != http.StatusOK {
		return rep, fmt.Errorf("node evidence at %s: HTTP %s: not a U.P. node's HTTP API", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return rep, fmt.Errorf("node evidence at %s: %w", u, err)
	}
	if err := json.Unmarshal(body, &rep); err != nil || rep.Role != "node" {
		return rep, fmt.Errorf("node evidence at %s: the answer is not a U.P. node's evidence", u)
	}
	return rep, nil
}

// printEvidence writes the records as a table, and a count per sender.
func printEvidence(w io.Writer, rep node.EvidenceReport) error {
	if len(rep.Records) == 0 {
		_, err := fmt.Fprintln(w, "no forged states refused")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSENDER\tPROTOCOL\tJOB\tPHASE\tREASON")
	per := map[string]int{}
	var order []string
	for _, r := range rep.Records {
		job := r.Job
		if len(job) > 16 {
			job = job[len(job)-16:]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", time.UnixMilli(r.At).UTC().Format(time.RFC3339), r.Sender, r.Protocol, job, r.Phase, r.Reason)
		if per[r.Sender] == 0 {
			order = append(order, r.Sender)
		}
		per[r.Sender]++
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range order {
		fmt.Fprintf(w, "%s: %d refused\n", s, per[s])
	}
	return nil
}
