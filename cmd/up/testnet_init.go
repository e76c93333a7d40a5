package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
)

// newTestnetInitCmd makes every identity of a multi-process test network
// in one command: the CA init job of the docker compose testnet.
func newTestnetInitCmd() *cobra.Command {
	var dir, hostFmt, projectName string
	var nodes, clients, jobs, port int
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a CA and certified data directories for nodes, a project and clients",
		Long: `Creates DIR/ca, DIR/node1..N, DIR/project, DIR/client1..M with certificates
issued by the new CA, DIR/bootstrap.txt (node1's multiaddr, with the host
name from --host) and DIR/jobs.yaml (a sweep of --jobs hashchain jobs):
everything a multi-process or docker compose test network needs.`,
		Example: `  up testnet init --dir data --nodes 4 --clients 2 --host node%d --jobs 50`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("dir", dir); err != nil {
				return err
			}
			if nodes < 1 || clients < 0 || jobs < 1 {
				return usageError{fmt.Errorf("want --nodes >= 1, --clients >= 0, --jobs >= 1")}
			}
			if err := checkPartyName(projectName); err != nil {
				return usageError{fmt.Errorf("--project %q: %w", projectName, err)}
			}
			if exists(filepath.Join(dir, "ca")) {
				return fmt.Errorf("%s already holds a test network (ca/ exists)", dir)
			}
			now := time.Now()
			ca, err := certs.NewAuthority("U.P. testnet CA", now.Add(-time.Hour), 365*24*time.Hour, nil)
			if err != nil {
				return err
			}
			caDir := filepath.Join(dir, "ca")
			if err := os.MkdirAll(caDir, 0o700); err != nil {
				return err
			}
			keyPEM, err := certs.EncodePrivateKeyPEM(ca.Key)
			if err != nil {
				return err
			}
			caPEM := certs.EncodeCertPEM(ca.Cert)
			if err := keystore.WriteFileAtomic(filepath.Join(caDir, "ca.crt"), caPEM, 0o644); err != nil {
				return err
			}
			if err := keystore.WriteFileAtomic(filepath.Join(caDir, "ca.key"), keyPEM, 0o600); err != nil {
				return err
			}
			party := func(sub string, role certs.Role, name string) (*keystore.Identity, error) {
				d := filepath.Join(dir, sub)
				csrPath, err := keystore.Init(d, role, name, caPEM, now, nil)
				if err != nil {
					return nil, err
				}
				csr, err := os.ReadFile(csrPath)
				if err != nil {
					return nil, err
				}
				pub, _, err := certs.ReadSubjectKey(csr)
				if err != nil {
					return nil, err
				}
				c, err := ca.Issue(certs.IssueRequest{PublicKey: pub, Role: role, Name: name, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour)})
				if err != nil {
					return nil, err
				}
				if err := keystore.WriteFileAtomic(keystore.Paths{Dir: d, Role: role}.Cert(), certs.EncodeCertPEM(c), 0o644); err != nil {
					return nil, err
				}
				return keystore.Load(d, role, now)
			}
			var bootstrap string
			for i := 1; i <= nodes; i++ {
				id, err := party(fmt.Sprintf("node%d", i), certs.RoleNode, fmt.Sprintf("node%d", i))
				if err != nil {
					return err
				}
				if i == 1 {
					bootstrap = fmt.Sprintf("/dns4/%s/tcp/%d/p2p/%s\n", fmt.Sprintf(hostFmt, 1), port, id.PeerID)
				}
			}
			if _, err := party("project", certs.RoleProject, projectName); err != nil {
				return err
			}
			for i := 1; i <= clients; i++ {
				if _, err := party(fmt.Sprintf("client%d", i), certs.RoleClient, fmt.Sprintf("client%d", i)); err != nil {
					return err
				}
			}
			if err := keystore.WriteFileAtomic(filepath.Join(dir, "bootstrap.txt"), []byte(bootstrap), 0o644); err != nil {
				return err
			}
			jobFile := fmt.Sprintf("app: hashchain\nargs: [\"20000\", \"{i}\"]\nkeywords: [%s]\nt_finish: 2m\ncopies: 1\nsweep:\n  i: {from: 1, to: %d}\n", projectName, jobs)
			if err := keystore.WriteFileAtomic(filepath.Join(dir, "jobs.yaml"), []byte(jobFile), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "test network in %s: CA, %d nodes, project %q, %d clients; bootstrap %s", dir, nodes, projectName, clients, bootstrap)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory to create everything in (required)")
	f.IntVar(&nodes, "nodes", 4, "nodes")
	f.IntVar(&clients, "clients", 2, "clients")
	f.IntVar(&jobs, "jobs", 50, "jobs in jobs.yaml")
	f.IntVar(&port, "port", 4001, "the nodes' TCP port")
	f.StringVar(&hostFmt, "host", "node%d", "host name of node i, printf style, for the bootstrap address")
	f.StringVar(&projectName, "project", "demo", "the project's name")
	return cmd
}
