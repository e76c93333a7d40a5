package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/cadir"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
)

func newCACmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Run the certificate authority that admits nodes, projects and clients",
		Long: `The CA issues the X.509 (Ed25519) certificates every party needs, and the
signed revocation list that bans them. Its directory holds ca.crt (give it
to everyone), ca.key (keep it offline) and crl.pem.`,
	}
	cmd.AddCommand(newCAInitCmd(), newCAIssueCmd(), newCARevokeCmd())
	return cmd
}

func newCAInitCmd() *cobra.Command {
	var dir, name string
	var days int
	cmd := &cobra.Command{
		Use:     "init",
		Short:   "Create a CA: a key and a self-signed certificate",
		Example: `  up ca init --data ca --name "U.P. volunteer CA"`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", dir); err != nil {
				return err
			}
			if days <= 0 {
				return usageError{fmt.Errorf("--days must be positive, got %d", days)}
			}
			ca, err := cadir.Create(dir, name, time.Now(), time.Duration(days)*24*time.Hour, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "CA %q created in %s (certificate %s, valid until %s)\n",
				name, dir, ca.CertPath(), ca.Authority.Cert.NotAfter.UTC().Format(time.DateOnly))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data", "", "CA directory to create (required)")
	oldFlagName(cmd.Flags(), &dir, "data", "dir")
	cmd.Flags().StringVar(&name, "name", "U.P. CA", "CA name (certificate subject)")
	cmd.Flags().IntVar(&days, "days", 3650, "validity of the CA certificate, in days")
	return cmd
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func newCAIssueCmd() *cobra.Command {
	var dir, roleName, in, out, name string
	var days int
	var force bool
	cmd := &cobra.Command{
		Use:   "issue",
		Short: "Issue a certificate for a node, project or client",
		Long: `Issue a certificate from a certificate request (the .csr file 'up node init'
writes) or a PEM public key. The role is the CA operator's decision.`,
		Example: `  up ca issue --data ca --role node --in n1/node.csr --out n1/node.crt`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", dir, "role", roleName, "in", in, "out", out); err != nil {
				return err
			}
			role, err := certs.ParseRole(roleName)
			if err != nil || role == certs.RoleCA {
				return usageError{fmt.Errorf("--role %q: want node, project or client", roleName)}
			}
			if days <= 0 {
				return usageError{fmt.Errorf("--days must be positive, got %d", days)}
			}
			if exists(out) && !force {
				return fmt.Errorf("%s exists (use --force to replace it)", out)
			}
			ca, err := cadir.Load(dir)
			if err != nil {
				return err
			}
			req, err := cadir.ReadRequest(in)
			if err != nil {
				return err
			}
			if name != "" {
				req.Name = name
			}
			if req.Name == "" {
				return usageError{fmt.Errorf("%s names no subject: give --name", in)}
			}
			now := time.Now()
			c, err := ca.Issue(req, role, now.Add(-5*time.Minute), now.Add(time.Duration(days)*24*time.Hour))
			if err != nil {
				return err
			}
			if err := cadir.WriteCert(out, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "issued %s certificate for %q, serial %x, valid until %s: %s\n",
				role, req.Name, c.SerialNumber, c.NotAfter.UTC().Format(time.DateOnly), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "data", "", "CA directory (required)")
	oldFlagName(f, &dir, "data", "dir")
	f.StringVar(&roleName, "role", "", "role: node, project or client (required)")
	f.StringVar(&in, "in", "", "certificate request (.csr) or PEM public key (required)")
	f.StringVar(&out, "out", "", "where to write the certificate (required)")
	f.StringVar(&name, "name", "", "subject name (default: the request's)")
	f.IntVar(&days, "days", 365, "validity, in days")
	f.BoolVar(&force, "force", false, "replace an existing --out file")
	return cmd
}

func newCARevokeCmd() *cobra.Command {
	var dir, out string
	var serials, certFiles []string
	var days int
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke certificates: write a new signed revocation list",
		Long: `Add serials to the CA's revocation list (crl.pem in the CA directory) and
sign a new one. Copy it into any node's data directory as crl.pem; nodes
pick it up within a minute and spread it through the overlay.`,
		Example: `  up ca revoke --data ca --cert n1/node.crt
  up ca revoke --data ca --serial 2f33efe20b855758836408cd6ddc3e0a`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", dir); err != nil {
				return err
			}
			if len(serials)+len(certFiles) == 0 {
				return usageError{errors.New("nothing to revoke: give --serial or --cert")}
			}
			if days <= 0 {
				return usageError{fmt.Errorf("--days must be positive, got %d", days)}
			}
			list, err := parseSerials(serials)
			if err != nil {
				return err
			}
			ca, err := cadir.Load(dir)
			if err != nil {
				return err
			}
			for _, f := range certFiles {
				n, err := ca.IssuedSerial(f)
				if err != nil {
					return fmt.Errorf("revoke: %w", err)
				}
				list = append(list, n)
			}
			rl, already, err := ca.Revoke(list, time.Now(), time.Duration(days)*24*time.Hour)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, n := range already {
				fmt.Fprintf(w, "serial %x is already revoked in %s\n", n, ca.CRLPath())
			}
			if rl == nil {
				fmt.Fprintf(w, "nothing new to revoke: %s unchanged\n", ca.CRLPath())
				return nil
			}
			if out != "" {
				if err := keystore.WriteFileAtomic(out, rl.PEM(), 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(w, "revocation list %s: number %s, %d revoked\n", ca.CRLPath(), rl.Number, len(rl.Serials()))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "data", "", "CA directory (required)")
	oldFlagName(f, &dir, "data", "dir")
	f.StringSliceVar(&serials, "serial", nil, "serial number to revoke, hexadecimal (repeatable)")
	f.StringSliceVar(&certFiles, "cert", nil, "certificate file to revoke (repeatable)")
	f.StringVar(&out, "out", "", "also write the list here")
	f.IntVar(&days, "days", 7, "days until the list's next update")
	return cmd
}

// parseSerials parses --serial values: hexadecimal, with optional colons
// or 0x.
func parseSerials(serials []string) ([]*big.Int, error) {
	var list []*big.Int
	for _, s := range serials {
		n, ok := new(big.Int).SetString(strings.TrimPrefix(strings.ReplaceAll(s, ":", ""), "0x"), 16)
		if !ok || n.Sign() <= 0 {
			return nil, usageError{fmt.Errorf("--serial %q is not a positive hexadecimal number", s)}
		}
		list = append(list, n)
	}
	return list, nil
}
