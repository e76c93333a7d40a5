package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/up-pool/up/cadir"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
)

// testnetInitFlags are the flags of 'up testnet init'.
type testnetInitFlags struct {
	dir, hostFmt, project      string
	nodes, clients, jobs, port int
}

// defaultTestnetInitFlags are the defaults of 'up testnet init'.
func defaultTestnetInitFlags() testnetInitFlags {
	return testnetInitFlags{hostFmt: "node%d", project: "demo", nodes: 4, clients: 2, jobs: 50, port: 4001}
}

// newTestnetInitCmd makes every identity of a multi-process test network
// in one command: the CA init job of the docker compose testnet.
func newTestnetInitCmd() *cobra.Command {
	fl := defaultTestnetInitFlags()
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
			if err := fl.check(); err != nil {
				return err
			}
			if exists(filepath.Join(fl.dir, "ca")) {
				return fmt.Errorf("%s already holds a test network (ca/ exists)", fl.dir)
			}
			bootstrap, err := makeTestnet(fl, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "test network in %s: CA, %d nodes, project %q, %d clients; bootstrap %s",
				fl.dir, fl.nodes, fl.project, fl.clients, bootstrap)
			return nil
		},
	}
	bindTestnetInitFlags(cmd.Flags(), &fl)
	return cmd
}

// bindTestnetInitFlags registers the flags of 'up testnet init' on f,
// defaulting to what fl holds.
func bindTestnetInitFlags(f *pflag.FlagSet, fl *testnetInitFlags) {
	f.StringVar(&fl.dir, "dir", fl.dir, "directory to create everything in (required)")
	f.IntVar(&fl.nodes, "nodes", fl.nodes, "nodes")
	f.IntVar(&fl.clients, "clients", fl.clients, "clients")
	f.IntVar(&fl.jobs, "jobs", fl.jobs, "jobs in jobs.yaml")
	f.IntVar(&fl.port, "port", fl.port, "the nodes' TCP port")
	f.StringVar(&fl.hostFmt, "host", fl.hostFmt, "host name of node i, printf style, for the bootstrap address")
	f.StringVar(&fl.project, "project", fl.project, "the project's name")
}

// check reports the first bad flag as a usage error. It touches no file.
func (f testnetInitFlags) check() error {
	if err := required("dir", f.dir); err != nil {
		return err
	}
	if f.nodes < 1 || f.clients < 0 || f.jobs < 1 {
		return usageError{fmt.Errorf("want --nodes >= 1, --clients >= 0, --jobs >= 1")}
	}
	if err := checkPartyName(f.project); err != nil {
		return usageError{fmt.Errorf("--project %q: %w", f.project, err)}
	}
	return nil
}

// bootstrapLine is the line of DIR/bootstrap.txt: node1's multiaddr when
// its peer ID is id.
func (f testnetInitFlags) bootstrapLine(id peer.ID) string {
	return fmt.Sprintf("/dns4/%s/tcp/%d/p2p/%s\n", fmt.Sprintf(f.hostFmt, 1), f.port, id)
}

// jobFile is DIR/jobs.yaml: a sweep of --jobs hashchain jobs of the
// project.
func (f testnetInitFlags) jobFile() string {
	return fmt.Sprintf("app: hashchain\nargs: [\"20000\", \"{i}\"]\nkeywords: [%s]\nt_finish: 2m\ncopies: 1\nsweep:\n  i: {from: 1, to: %d}\n", f.project, f.jobs)
}

// makeTestnet creates in f.dir the CA, the certified parties,
// bootstrap.txt and jobs.yaml, and returns bootstrap.txt's line.
func makeTestnet(f testnetInitFlags, now time.Time) (string, error) {
	ca, err := cadir.Create(filepath.Join(f.dir, "ca"), "U.P. testnet CA", now.Add(-time.Hour), 365*24*time.Hour, nil)
	if err != nil {
		return "", err
	}
	party := func(sub string, role certs.Role, name string) (*keystore.Identity, error) {
		return ca.Certify(cadir.Party{Dir: filepath.Join(f.dir, sub), Role: role, Name: name, Now: now})
	}
	var bootstrap string
	for i := 1; i <= f.nodes; i++ {
		id, err := party(fmt.Sprintf("node%d", i), certs.RoleNode, fmt.Sprintf("node%d", i))
		if err != nil {
			return "", err
		}
		if i == 1 {
			bootstrap = f.bootstrapLine(id.PeerID)
		}
	}
	if _, err := party("project", certs.RoleProject, f.project); err != nil {
		return "", err
	}
	for i := 1; i <= f.clients; i++ {
		if _, err := party(fmt.Sprintf("client%d", i), certs.RoleClient, fmt.Sprintf("client%d", i)); err != nil {
			return "", err
		}
	}
	if err := keystore.WriteFileAtomic(filepath.Join(f.dir, "bootstrap.txt"), []byte(bootstrap), 0o644); err != nil {
		return "", err
	}
	if err := keystore.WriteFileAtomic(filepath.Join(f.dir, "jobs.yaml"), []byte(f.jobFile()), 0o644); err != nil {
		return "", err
	}
	return bootstrap, nil
}
