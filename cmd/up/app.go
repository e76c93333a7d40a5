package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/runner"
)

func newAppCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "app",
		Short: "The applications built into up (for demos, tests and benchmarks)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in applications",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range apps.Names() {
				a, _ := apps.Lookup(n)
				fmt.Fprintf(cmd.OutOrStdout(), "%-12s %s\n", n, a.Help)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:                "exec --cpu S --mem B --wall D -- APP [ARGS...]",
		Short:              "Run an application under limits (used by the worker client)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return cmd.Help()
			}
			os.Exit(runner.Exec(args, cmd.OutOrStdout(), cmd.ErrOrStderr()))
			return nil
		},
	})
	return cmd
}
