package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/client"
)

func newClientCreditCmd() *cobra.Command {
	var fl clientAPIFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "credit",
		Short: "Show a running client's credit, gathered from the overlay and verified",
		Long: `Show a running client's credit: the client gathers the receipts its
projects signed for its valid results from the nodes closest to its credit
key, verifies each against the CA and sums them (as 'up credit show' does
for any client, from a directory not in use). A gathering is reused for
30 s.`,
		Example: `  up client credit --http 127.0.0.1:8050
  up client credit --http 127.0.0.1:8050 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientGet(cmd.OutOrStdout(), fl, "/api/credit", asJSON, printClientCredit)
		},
	}
	bindClientAPIFlags(cmd.Flags(), &fl)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the credit as JSON")
	return cmd
}

// printClientCredit writes a client's credit report as text, or fails
// with why it could not be gathered.
func printClientCredit(w io.Writer, r client.CreditReport) error {
	if r.Error != "" {
		return errors.New(r.Error)
	}
	writeCredit(w, r.Credit, r.Asked, r.Answered)
	return nil
}
