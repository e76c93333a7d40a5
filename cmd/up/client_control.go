package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/client"
)

// clientActionFlags are the flags of 'up client pause', 'resume', 'attach'
// and 'detach': the API, and the project for attach and detach.
type clientActionFlags struct {
	api     clientAPIFlags
	project string
}

// clientAction is an action on a running client, as its flags say.
type clientAction struct {
	api  clientAPI
	path string // /api/pause, ...
	body any    // nil: none
}

// parse checks the flags of the action named verb (pause, resume, attach,
// detach). It touches no network.
func (f clientActionFlags) parse(verb string, getenv func(string) string) (clientAction, error) {
	api, err := f.api.parse(getenv)
	if err != nil {
		return clientAction{}, err
	}
	act := clientAction{api: api, path: "/api/" + verb}
	switch verb {
	case "attach":
		if err := required("project", f.project); err != nil {
			return act, err
		}
		ps, _, err := parseProjects([]string{f.project})
		if err != nil {
			return act, err
		}
		act.body = map[string]any{"project": ps[0].Name, "share": ps[0].Share}
	case "detach":
		if err := required("project", f.project); err != nil {
			return act, err
		}
		if err := checkPartyName(f.project); err != nil {
			return act, usageError{fmt.Errorf("--project %q: %w", f.project, err)}
		}
		act.body = map[string]string{"project": f.project}
	}
	return act, nil
}

// clientActionHelp are the help texts of the actions.
var clientActionHelp = map[string]struct{ short, long, example string }{
	"pause": {"Pause a running client: it claims no new job",
		`Pause a running client: once the command returns, the client claims no
new job until 'up client resume'. The jobs it holds (claimed, fetching
inputs or running) go on to their results. The pause is kept in the
client's data directory (DATA/controls.json): a restarted client stays
paused.`,
		`  up client pause --http 127.0.0.1:8050`},
	"resume": {"Resume a paused client",
		`Resume a paused client: it claims jobs again at once.`,
		`  up client resume --http 127.0.0.1:8050`},
	"attach": {"Attach a running client to a project, or re-attach a detached one",
		`Attach a running client to a project (NAME or NAME:SHARE, as 'up client
run --project' takes it; share 100 by default), or re-attach a detached
one with that share. Its jobs run only if their applications are allowed
(--allow, --allow-wasm of 'up client run'): 'up client explain' shows the
jobs skipped as "application not allowed". The attachment is kept in
DATA/controls.json: it holds after a restart, --project or not.`,
		`  up client attach --http 127.0.0.1:8050 --project cms:25`},
	"detach": {"Detach a running client from a project",
		`Detach a running client from a project: it takes none of its jobs, drops
the entries served to it, and gives back (releases) the project's jobs it
claimed that are not running yet; its running jobs go on to their
results. The detachment is kept in DATA/controls.json: after a restart
the project stays detached, even when --project names it, until 'up
client attach' (or the file is removed).`,
		`  up client detach --http 127.0.0.1:8050 --project cms`},
}

// newClientActionCmd is 'up client VERB' for pause, resume, attach and
// detach.
func newClientActionCmd(verb string) *cobra.Command {
	var fl clientActionFlags
	h := clientActionHelp[verb]
	cmd := &cobra.Command{
		Use: verb, Short: h.short, Long: h.long, Example: h.example, Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			act, err := fl.parse(verb, os.Getenv)
			if err != nil {
				return err
			}
			var ctl client.Controls
			if err := act.api.post(act.path, act.body, &ctl); err != nil {
				return err
			}
			return printControls(cmd.OutOrStdout(), ctl)
		},
	}
	bindClientAPIFlags(cmd.Flags(), &fl.api)
	switch verb {
	case "attach":
		cmd.Flags().StringVar(&fl.project, "project", "", "the project: NAME or NAME:SHARE (required)")
	case "detach":
		cmd.Flags().StringVar(&fl.project, "project", "", "the project's name (required)")
	}
	return cmd
}

// printControls writes a client's controls as text.
func printControls(w io.Writer, ctl client.Controls) error {
	state := "working"
	if ctl.Paused {
		state = "paused"
	}
	fmt.Fprintf(w, "client %s\n", state)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROJECT\tSHARE\tATTACHED")
	for _, p := range ctl.Projects {
		attached := "yes"
		if !p.Attached {
			attached = "no (detached)"
		}
		fmt.Fprintf(tw, "  %s\t%g\t%s\n", p.Name, p.Share, attached)
	}
	return tw.Flush()
}
