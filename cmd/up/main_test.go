package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain doubles as the up binary when UP_TEST_MAIN is set, so tests can
// run a command in a process of its own: real stderr, real signals.
func TestMain(m *testing.M) {
	if os.Getenv("UP_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// upCommand is the command line args run by a child process that is the
// up binary.
func upCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "UP_TEST_MAIN=1")
	return cmd
}

// upExec runs the command line in a child process and returns exit code,
// stdout and stderr: everything the process printed, libp2p's logs too.
func upExec(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := upCommand(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run up %s: %v", strings.Join(args, " "), err)
	return 0, "", ""
}

// upRun runs the command line in-process and returns exit code, stdout and
// stderr.
func upRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := upRun(t, args...)
	if code != 0 {
		t.Fatalf("up %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// fixture: a CA and two initialised, certified node directories.
type fixture struct {
	dir, ca, n1, n2 string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	d := t.TempDir()
	f := fixture{dir: d, ca: filepath.Join(d, "ca"), n1: filepath.Join(d, "n1"), n2: filepath.Join(d, "n2")}
	mustRun(t, "ca", "init", "--dir", f.ca)
	for _, n := range []string{f.n1, f.n2} {
		mustRun(t, "node", "init", "--data", n, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", filepath.Base(n))
		mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "node", "--in", filepath.Join(n, "node.csr"), "--out", filepath.Join(n, "node.crt"))
	}
	return f
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadInput: every bad command line or input file gives one line on
// stderr naming the problem, a non-zero exit, and leaves nothing behind.
func TestBadInput(t *testing.T) {
	f := newFixture(t)
	garbage := writeFile(t, filepath.Join(f.dir, "garbage.pem"), "not a pem file\n")
	notCA := filepath.Join(f.n1, "node.crt")
	// A third node whose certificate is n1's: key and certificate mismatch.
	n3 := filepath.Join(f.dir, "n3")
	mustRun(t, "node", "init", "--data", n3, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", "n3")
	copyFile(t, filepath.Join(f.n1, "node.crt"), filepath.Join(n3, "node.crt"))
	// A fourth node without a certificate.
	n4 := filepath.Join(f.dir, "n4")
	mustRun(t, "node", "init", "--data", n4, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", "n4")
	// A project whose result key is gone.
	proj := filepath.Join(f.dir, "proj")
	mustRun(t, "project", "init", "--data", proj, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", "lhc")
	mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "project", "--in", filepath.Join(proj, "project.csr"), "--out", filepath.Join(proj, "project.crt"))
	if err := os.Remove(filepath.Join(proj, "result.key")); err != nil {
		t.Fatal(err)
	}
	goodJobs := writeFile(t, filepath.Join(f.dir, "good.yaml"), "app: noop\nkeywords: [lhc]\n")
	badJobs := writeFile(t, filepath.Join(f.dir, "bad.yaml"), "app: [noop\n")
	emptyJobs := writeFile(t, filepath.Join(f.dir, "empty.yaml"), "app: noop\nkeywords: [lhc]\nsweep:\n  x: []\n")
	fresh := filepath.Join(f.dir, "fresh")
	boot := "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGGbiuEpRQ9Qe2Drsouy5vSbmokPneYDut8zRXSVvqVmp"
	out := filepath.Join(f.dir, "out.crt")
	// A port already in use, for the listen and HTTP addresses.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	n2store := filepath.Join(f.n2, "store")

	type badCase struct {
		name     string
		args     []string
		code     int
		mention  string
		notExist string // a path that must not exist afterwards
	}
	cases := []badCase{
		{"unknown command", []string{"bogus"}, 2, "unknown command", ""},
		{"unknown flag", []string{"ca", "init", "--dir", fresh, "--bogus"}, 2, "unknown flag: --bogus", fresh},
		{"missing required flag", []string{"ca", "init"}, 2, "missing --data", ""},
		{"bad days", []string{"ca", "init", "--dir", fresh, "--days", "0"}, 2, "--days", fresh},
		{"stray argument", []string{"ca", "init", "--dir", fresh, "extra"}, 2, `unexpected argument "extra"`, fresh},
		{"CA exists", []string{"ca", "init", "--dir", f.ca}, 1, "already holds a CA", ""},
		{"issue from missing CA", []string{"ca", "issue", "--dir", fresh, "--role", "node", "--in", filepath.Join(f.n1, "node.csr"), "--out", out}, 1, "ca.crt", out},
		{"issue bad role", []string{"ca", "issue", "--dir", f.ca, "--role", "admin", "--in", filepath.Join(f.n1, "node.csr"), "--out", out}, 2, `--role "admin"`, out},
		{"issue missing request", []string{"ca", "issue", "--dir", f.ca, "--role", "node", "--in", filepath.Join(f.dir, "nope.csr"), "--out", out}, 1, "nope.csr", out},
		{"issue garbage request", []string{"ca", "issue", "--dir", f.ca, "--role", "node", "--in", garbage, "--out", out}, 1, "garbage.pem", out},
		{"issue over existing", []string{"ca", "issue", "--dir", f.ca, "--role", "node", "--in", filepath.Join(f.n1, "node.csr"), "--out", filepath.Join(f.n1, "node.crt")}, 1, "--force", ""},
		{"revoke bad serial", []string{"ca", "revoke", "--dir", f.ca, "--serial", "zz"}, 2, `--serial "zz"`, filepath.Join(f.ca, "crl.pem")},
		{"revoke nothing", []string{"ca", "revoke", "--dir", f.ca}, 2, "nothing to revoke", filepath.Join(f.ca, "crl.pem")},
		{"revoke garbage cert", []string{"ca", "revoke", "--dir", f.ca, "--cert", garbage}, 1, "garbage.pem", filepath.Join(f.ca, "crl.pem")},
		{"node init missing CA", []string{"node", "init", "--data", fresh, "--ca", filepath.Join(f.dir, "nope.crt"), "--name", "x"}, 1, "nope.crt", fresh},
		{"node init garbage CA", []string{"node", "init", "--data", fresh, "--ca", garbage, "--name", "x"}, 1, "CA certificate", fresh},
		{"node init non-CA cert", []string{"node", "init", "--data", fresh, "--ca", notCA, "--name", "x"}, 1, "not a CA", fresh},
		{"node init twice", []string{"node", "init", "--data", f.n1, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", "n1"}, 1, "already initialised", ""},
		{"node init bad name", []string{"node", "init", "--data", fresh, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", strings.Repeat("x", 100)}, 2, "--name", fresh},
		{"node run no data dir", []string{"node", "run", "--data", fresh, "--listen", "/ip4/127.0.0.1/tcp/0"}, 1, "ca.crt", fresh},
		{"node run no certificate", []string{"node", "run", "--data", n4, "--listen", "/ip4/127.0.0.1/tcp/0"}, 1, "node.csr", filepath.Join(n4, "store")},
		{"node run key mismatch", []string{"node", "run", "--data", n3, "--listen", "/ip4/127.0.0.1/tcp/0"}, 1, "does not match", filepath.Join(n3, "store")},
		{"node run malformed listen", []string{"node", "run", "--data", f.n1, "--listen", "/ip4/1.2.3"}, 2, `--listen "/ip4/1.2.3"`, filepath.Join(f.n1, "store")},
		{"node run bootstrap without id", []string{"node", "run", "--data", f.n1, "--bootstrap", "/ip4/127.0.0.1/tcp/1"}, 2, "/p2p/", filepath.Join(f.n1, "store")},
		{"node run bad log level", []string{"node", "run", "--data", f.n1, "--log-level", "loud"}, 2, "--log-level", filepath.Join(f.n1, "store")},
		{"node run bad replication", []string{"node", "run", "--data", f.n1, "--replication", "0"}, 2, "--replication", filepath.Join(f.n1, "store")},
		{"node status nothing there", []string{"node", "status", "--http", "127.0.0.1:1"}, 1, "127.0.0.1:1", ""},
		{"demo one node", []string{"demo", "--nodes", "1"}, 2, "--nodes", ""},
		{"demo copies over clients", []string{"demo", "--clients", "1"}, 2, "--copies", ""},
		{"lookups bad transport", []string{"testnet", "lookups", "--transport", "udp"}, 2, "--transport", ""},
		{"client run no bootstrap", []string{"client", "run", "--data", fresh, "--project", "lhc"}, 2, "--bootstrap", fresh},
		{"client run no project", []string{"client", "run", "--data", fresh, "--bootstrap", boot}, 2, "--project", fresh},
		{"client run bad share", []string{"client", "run", "--data", fresh, "--bootstrap", boot, "--project", "lhc:lots"}, 2, `--project "lhc:lots"`, fresh},
		{"client run allow unattached", []string{"client", "run", "--data", fresh, "--bootstrap", boot, "--project", "lhc", "--allow", "cms=x"}, 2, "not attached", fresh},
		{"client run relative exec", []string{"client", "run", "--data", fresh, "--bootstrap", boot, "--project", "lhc", "--exec", "x=bin/x"}, 2, "--exec", fresh},
		{"client run bad memory", []string{"client", "run", "--data", fresh, "--bootstrap", boot, "--project", "lhc", "--memory", "lots"}, 2, "--memory", fresh},
		{"client run no data dir", []string{"client", "run", "--data", fresh, "--bootstrap", boot, "--project", "lhc"}, 1, "ca.crt", fresh},
		{"submit malformed job file", []string{"project", "submit", "--data", proj, "--bootstrap", boot, badJobs}, 1, "bad.yaml", ""},
		{"submit template expanding to nothing", []string{"project", "submit", "--data", proj, "--bootstrap", boot, emptyJobs}, 1, "expands to nothing", ""},
		{"submit missing job file", []string{"project", "submit", "--data", proj, "--bootstrap", boot, filepath.Join(f.dir, "nope.yaml")}, 1, "nope.yaml", ""},
		{"submit no job file", []string{"project", "submit", "--data", proj, "--bootstrap", boot}, 2, "one job file", ""},
		{"submit missing key", []string{"project", "submit", "--data", proj, "--bootstrap", boot, goodJobs}, 1, "result.key", filepath.Join(proj, "ledger.db")},
		{"submit no bootstrap", []string{"project", "submit", "--data", proj, goodJobs}, 2, "--bootstrap", ""},
		{"status without ledger", []string{"project", "status", "--data", proj}, 1, "no ledger", ""},
		{"results needs a target", []string{"project", "results", "--data", proj}, 2, "--out DIR or --jsonl", ""},
		{"client init missing CA", []string{"client", "init", "--data", fresh, "--ca", filepath.Join(f.dir, "nope.crt"), "--name", "x"}, 1, "nope.crt", fresh},
	}
	// Failures at run time, in a child process: libp2p's own logs would
	// go to the process's stderr, past upRun's buffer.
	children := []badCase{
		{"node run listen port in use", []string{"node", "run", "--data", f.n2, "--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", busyPort)}, 1, "address already in use", n2store},
		{"node run HTTP port in use", []string{"node", "run", "--data", f.n2, "--listen", "/ip4/127.0.0.1/tcp/0", "--http", busy.Addr().String()}, 1, "HTTP API on " + busy.Addr().String(), n2store},
		{"node run unusable HTTP address", []string{"node", "run", "--data", f.n2, "--listen", "/ip4/127.0.0.1/tcp/0", "--http", "127.0.0.1:99999"}, 1, "HTTP API on 127.0.0.1:99999", n2store},
	}
	for i, c := range append(cases, children...) {
		t.Run(c.name, func(t *testing.T) {
			run := upRun
			if i >= len(cases) {
				run = upExec
			}
			code, _, errs := run(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errs)
			}
			lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "up: ") {
				t.Errorf("stderr is not one 'up: ...' line: %q", errs)
			}
			if !strings.Contains(errs, c.mention) {
				t.Errorf("stderr %q does not mention %q", errs, c.mention)
			}
			if c.notExist != "" {
				if _, err := os.Stat(c.notExist); err == nil {
					t.Errorf("%s was left behind", c.notExist)
				}
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

// TestHelpEverywhere: every command has help text.
func TestHelpEverywhere(t *testing.T) {
	var walk func(path []string)
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	seen := 0
	walk = func(path []string) {
		code, out, errs := upRun(t, append(path, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("up %s --help: exit %d, stdout %q, stderr %q", strings.Join(path, " "), code, out, errs)
		}
		seen++
	}
	for _, c := range root.Commands() {
		if c.Short == "" {
			t.Errorf("command %s has no short help", c.Name())
		}
		walk([]string{c.Name()})
		for _, sub := range c.Commands() {
			if sub.Short == "" {
				t.Errorf("command %s %s has no short help", c.Name(), sub.Name())
			}
			walk([]string{c.Name(), sub.Name()})
		}
	}
	if seen < 8 {
		t.Fatalf("only %d commands checked", seen)
	}
}

// TestClientFlags: a full, valid client command line parses into the
// projects, shares, allow-list and memory it names.
func TestClientFlags(t *testing.T) {
	f := clientRunFlags{data: "w", bootstrap: []string{"/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGGbiuEpRQ9Qe2Drsouy5vSbmokPneYDut8zRXSVvqVmp"},
		projects: []string{"lhc:75", "cms:25", "seti"}, allow: []string{"lhc=a,b", "cms=*"}, external: []string{"a=/opt/a"}, memory: "2GiB", slots: 1}
	s, err := f.parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.projects) != 3 || s.projects[0].Share != 75 || s.projects[1].Name != "cms" || s.projects[2].Share != 100 {
		t.Fatalf("projects %+v", s.projects)
	}
	if len(s.allow["lhc"]) != 2 || s.allow["cms"][0] != "*" || s.external["a"] != "/opt/a" || s.memory != 2<<30 {
		t.Fatalf("setup %+v", s)
	}
}

// TestParseBandwidth: bandwidths with and without units; bad ones refused.
func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]int64{"56kbit": 56_000, "20Mbit": 20_000_000, "1.5Gbit": 1_500_000_000, "9600": 9600} {
		if got, err := parseBandwidth(in); err != nil || got != want {
			t.Errorf("parseBandwidth(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1Mbit", "0", "10MB", "1e20"} {
		if _, err := parseBandwidth(in); err == nil {
			t.Errorf("parseBandwidth(%q) accepted", in)
		}
	}
}

// TestGCPercent: up sets its own GC target unless GOGC chose one.
func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		gogc string
		want int
		set  bool
	}{{"", defaultGCPercent, true}, {"100", 0, false}, {"off", 0, false}} {
		got, set := gcPercent(func(k string) string {
			if k == "GOGC" {
				return c.gogc
			}
			return ""
		})
		if got != c.want || set != c.set {
			t.Errorf("GOGC=%q: gcPercent = %d, %v; want %d, %v", c.gogc, got, set, c.want, c.set)
		}
	}
}
