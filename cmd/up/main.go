// Command up is the one binary of U.P., a decentralised job pool for
// volunteer computing: volunteers run `up node`, certificate authorities
// `up ca`, and `up demo` shows a whole network in one process.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	applyGCPolicy()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError marks an error in how the command was called.
type usageError struct{ error }

// run executes the command line args and returns the exit status: 0 on
// success, 1 when the work failed, 2 for a bad command line. Errors are one
// line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(stderr, "up: %s (see '%s --help')\n", msg, cmd.CommandPath())
		return 2
	}
	fmt.Fprintf(stderr, "up: %s\n", msg)
	return 1
}

// isCobraUsage recognises cobra's own command-line errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "flag needs an argument",
		"invalid argument", "required flag", "accepts ", "requires at least", "bad flag syntax"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "up",
		Short: "U.P.: a decentralised job pool for volunteer computing",
		Long: `U.P. replaces a volunteer-computing project's central task server with an
overlay of volunteer nodes (go-libp2p, Kademlia) that store signed,
replicated jobs and a keyword index. Projects submit and harvest from an
ordinary workstation; clients find and claim jobs by keyword.

Roles: 'up ca' certifies everyone, 'up node' is the volunteer daemon,
'up demo' runs a whole network in one process.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.Version = versionLine(version, commit, buildInfo())
	root.SetVersionTemplate("up {{.Version}}\n")
	root.AddCommand(newCACmd(), newNodeCmd(), newProjectCmd(), newClientCmd(), newAppCmd(), newDemoCmd(), newTestnetCmd(), newVersionCmd())
	root.AddCommand(newCreditCmd())
	root.AddCommand(newBenchCmd())
	return root
}

// version and commit may be set at build time with -ldflags
// "-X main.version=v1.2.3 -X main.commit=0123abc"; when empty, they come
// from the build information the go command records.
var version, commit string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of up: module version, commit, Go version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "up %s\n", versionLine(version, commit, buildInfo()))
			return nil
		},
	}
}

// buildInfo is the binary's build information, nil when it has none.
func buildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// versionLine describes the build: the version (setVersion, else the main
// module's, else "devel"), the commit (setCommit, else vcs.revision, else
// "unknown" as under -buildvcs=false), whether the tree was modified, and
// the Go version.
func versionLine(setVersion, setCommit string, bi *debug.BuildInfo) string {
	v, c, modified, goVersion := setVersion, setCommit, false, runtime.Version()
	if bi != nil {
		if v == "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && setCommit == "":
				c = s.Value
			case s.Key == "vcs.modified" && setCommit == "":
				modified = s.Value == "true"
			}
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	if len(c) > 12 {
		c = c[:12]
	}
	if modified {
		c += ", modified"
	}
	return fmt.Sprintf("%s (commit %s, %s)", v, c, goVersion)
}

// noArgs refuses positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

// required reports the first empty required flag value.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return usageError{fmt.Errorf("missing --%s", pairs[i])}
		}
	}
	return nil
}
