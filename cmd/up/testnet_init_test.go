package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/pflag"

	"github.com/up-pool/up/project"
)

// TestTestnetInitFlags: 'up testnet init' command lines, the defaults
// included, pass the check or fail it with a usage error naming the flag;
// the defaults make node1's bootstrap line and a parsing job file.
func TestTestnetInitFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		bad  string // substring of the usage error; "" for a good line
	}{
		{"defaults", []string{"--dir", "d"}, ""},
		{"compose", []string{"--dir", "d", "--nodes", "1", "--clients", "0", "--jobs", "1", "--host", "n%d", "--project", "lhc"}, ""},
		{"no dir", nil, "missing --dir"},
		{"no nodes", []string{"--dir", "d", "--nodes", "0"}, "want --nodes >= 1"},
		{"negative clients", []string{"--dir", "d", "--clients", "-1"}, "--clients >= 0"},
		{"no jobs", []string{"--dir", "d", "--jobs", "0"}, "--jobs >= 1"},
		{"project with a space", []string{"--dir", "d", "--project", "my project"}, `--project "my project"`},
		{"project with a colon", []string{"--dir", "d", "--project", "lhc:2"}, `--project "lhc:2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := defaultTestnetInitFlags()
			parseFlags(t, func(fs *pflag.FlagSet) { bindTestnetInitFlags(fs, &fl) }, tc.args...)
			err := fl.check()
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.bad != "" && (err == nil || !isUsage(err) || !strings.Contains(err.Error(), tc.bad)):
				t.Fatalf("err %v, want a usage error about %s", err, tc.bad)
			}
		})
	}
	fl := defaultTestnetInitFlags()
	if fl.nodes != 4 || fl.clients != 2 || fl.jobs != 50 || fl.port != 4001 || fl.project != "demo" {
		t.Fatalf("defaults %+v", fl)
	}
	id, err := peer.Decode(strings.TrimPrefix(testBoot[strings.Index(testBoot, "/p2p/"):], "/p2p/"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fl.bootstrapLine(id), "/dns4/node1/tcp/4001/p2p/"+id.String()+"\n"; got != want {
		t.Fatalf("bootstrap line %q, want %q", got, want)
	}
	units, _, err := project.ParseJobFile([]byte(fl.jobFile()), fl.project)
	if err != nil || len(units) != fl.jobs {
		t.Fatalf("jobs.yaml: %d units, %v:\n%s", len(units), err, fl.jobFile())
	}
}

// TestTestnetInitCommand makes a small test network and refuses to make
// a second one over it.
func TestTestnetInitCommand(t *testing.T) {
	dir := t.TempDir()
	out := mustRun(t, "testnet", "init", "--dir", dir, "--nodes", "2", "--clients", "1", "--jobs", "3", "--host", "n%d", "--port", "5001")
	boot, err := os.ReadFile(filepath.Join(dir, "bootstrap.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `test network in ` + dir + `: CA, 2 nodes, project "demo", 1 clients; bootstrap ` + string(boot); out != want ||
		!strings.HasPrefix(string(boot), "/dns4/n1/tcp/5001/p2p/") {
		t.Fatalf("stdout %q, bootstrap.txt %q", out, boot)
	}
	for _, f := range []string{"ca/ca.crt", "ca/ca.key", "node1/node.crt", "node2/node.crt", "project/project.crt", "client1/client.crt", "jobs.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if code, _, errs := upRun(t, "testnet", "init", "--dir", dir); code != 1 || !strings.Contains(errs, "already holds a test network") {
		t.Fatalf("second init: exit %d, stderr %q", code, errs)
	}
}
