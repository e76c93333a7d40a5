package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditclient"
	"github.com/up-pool/up/keystore"
)

func newCreditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "credit",
		Short: "Gather and verify a client's credit from the overlay",
		Long: `Credit reads the credit receipts projects signed for a client's valid
results, from the nodes that hold them, verifies each against the CA and
sums them across projects: no statistics server to trust.`,
	}
	cmd.AddCommand(newCreditShowCmd())
	return cmd
}

// creditShowFlags are the flags of 'up credit show'.
type creditShowFlags struct {
	data          string
	bootstrap     []string
	bootstrapFile string
	asJSON        bool
	logLevel      string
}

func newCreditShowCmd() *cobra.Command {
	var fl creditShowFlags
	cmd := &cobra.Command{
		Use:   "show [CLIENT]",
		Short: "Show a client's credit, summed from the receipts its nodes hold",
		Long: `Show asks the r nodes closest to the client's credit key for the
receipts they hold, verifies each one (a project's certificate from the CA,
valid when signed and not revoked; the project's signature), and prints
per project its newest receipt's total and the sum. A receipt that does
not verify is rejected and the node that sent it named; two receipts of
one project that contradict each other are reported.

CLIENT is the client's Ed25519 public key in hex (64 digits) or the path
of its certificate (client.crt); without it, the client of --data. --data
is the directory of a client or project this command joins as; it must
not be in use by a running 'up client run' or 'up project' command (one
identity joins once).`,
		Example: `  up credit show --data volunteer --bootstrap-file boot.txt
  up credit show --data lhc --bootstrap-file boot.txt volunteer/client.crt --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("want at most one CLIENT, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCreditShow(cmd, fl, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.data, "data", "", "data directory of a client or project to join as (required)")
	f.StringSliceVar(&fl.bootstrap, "bootstrap", nil, bootstrapHelp)
	f.StringVar(&fl.bootstrapFile, "bootstrap-file", "", bootstrapFileHelp)
	f.BoolVar(&fl.asJSON, "json", false, "print JSON")
	f.StringVar(&fl.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	return cmd
}

// partyRole is the role of the party whose directory dir is: client or
// project, by the certificate it holds.
func partyRole(dir string) (certs.Role, error) {
	for _, r := range []certs.Role{certs.RoleClient, certs.RoleProject} {
		if _, err := os.Stat(filepath.Join(dir, string(r)+".crt")); err == nil {
			return r, nil
		}
	}
	return "", usageError{fmt.Errorf("--data %s: no client.crt or project.crt in it (a certified client or project directory)", dir)}
}

// parseClientKey reads CLIENT: a hex Ed25519 public key, or a
// certificate file whose key it is.
func parseClientKey(arg string) (ed25519.PublicKey, error) {
	if b, err := hex.DecodeString(arg); err == nil {
		if len(b) != ed25519.PublicKeySize {
			return nil, usageError{fmt.Errorf("CLIENT %q: %d bytes of hex, want a %d-byte Ed25519 key", arg, len(b), ed25519.PublicKeySize)}
		}
		return ed25519.PublicKey(b), nil
	}
	pemBytes, err := os.ReadFile(arg)
	if err != nil {
		return nil, usageError{fmt.Errorf("CLIENT %q is neither a hex key nor a readable certificate: %w", arg, err)}
	}
	c, err := certs.DecodeCertPEM(pemBytes)
	if err != nil {
		return nil, usageError{fmt.Errorf("CLIENT %s: %w", arg, err)}
	}
	pub, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, usageError{fmt.Errorf("CLIENT %s: not an Ed25519 certificate", arg)}
	}
	return pub, nil
}

func runCreditShow(cmd *cobra.Command, fl creditShowFlags, args []string) error {
	if err := required("data", fl.data); err != nil {
		return err
	}
	role, err := partyRole(fl.data)
	if err != nil {
		return err
	}
	var client ed25519.PublicKey
	if len(args) == 1 {
		if client, err = parseClientKey(args[0]); err != nil {
			return err
		}
	} else if role != certs.RoleClient {
		return usageError{fmt.Errorf("missing CLIENT: --data %s is a project's, so name the client", fl.data)}
	}
	boot, err := bootstrapPeers(fl.bootstrap, fl.bootstrapFile)
	if err != nil {
		return err
	}
	if len(boot) == 0 {
		return usageError{fmt.Errorf("missing --bootstrap or --bootstrap-file: give a node to join through")}
	}
	logger, err := newLogger(cmd.ErrOrStderr(), fl.logLevel, "text")
	if err != nil {
		return err
	}
	id, err := keystore.Load(fl.data, role, time.Now())
	if err != nil {
		return err
	}
	if client == nil {
		client = id.Key.Public().(ed25519.PublicKey)
	}
	lock, err := keystore.LockDir(fl.data)
	if err != nil {
		return fmt.Errorf("%w (a running client shows its own credit: up client credit --http ADDR; or join with another directory)", err)
	}
	defer lock.Unlock()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	a, err := agent.Open(agent.Config{Identity: id, Logger: logger})
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Join(ctx, boot); err != nil {
		return err
	}
	c, g, err := creditclient.Show(ctx, a.Endpoint(), a.DHT(), client, time.Now())
	if err != nil {
		return err
	}
	if fl.asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(creditJSON{Credit: c, Asked: g.Asked, Answered: len(g.Sources)})
	}
	writeCredit(cmd.OutOrStdout(), c, g.Asked, len(g.Sources))
	return nil
}

// creditJSON is the JSON of 'up credit show --json'.
type creditJSON struct {
	credit.Credit
	Asked    int `json:"asked"`
	Answered int `json:"answered"`
}

// writeCredit prints a client's credit: per project, the sum, and what
// was rejected or contradicts itself.
func writeCredit(w io.Writer, c credit.Credit, asked, answered int) {
	fmt.Fprintf(w, "client %s: %d credit from %d valid results, %d projects (%d of its %d nodes answered)\n",
		hex.EncodeToString(c.Client), c.Total, c.Results, len(c.Projects), answered, asked)
	if len(c.Projects) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PROJECT\tCREDIT\tRESULTS\tRECEIPT\tSIGNED (project's clock)\tNODES")
		for _, p := range c.Projects {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t#%d\t%s\t%d\n", p.Project, p.Total, p.Results, p.Seq,
				time.UnixMilli(p.Created).UTC().Format(time.RFC3339), p.Sources)
		}
		tw.Flush()
	}
	if len(c.Rejected) > 0 {
		fmt.Fprintf(w, "rejected %d receipts (not counted):\n", len(c.Rejected))
		for _, r := range c.Rejected {
			fmt.Fprintf(w, "  from %s: %s\n", r.From, oneLine(r.Err))
		}
	}
	if len(c.Conflicts) > 0 {
		fmt.Fprintf(w, "contradictions in projects' own receipts:\n")
		for _, k := range c.Conflicts {
			fmt.Fprintf(w, "  %s receipt #%d: %s\n", k.Project, k.Seq, k.Why)
		}
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
