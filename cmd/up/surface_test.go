package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// nextCommand returns the command line an init printed after "next: ...: ".
func nextCommand(t *testing.T, out string) string {
	t.Helper()
	_, after, ok := strings.Cut(out, "run: ")
	if !ok {
		t.Fatalf("no next step in %q", out)
	}
	line, _, _ := strings.Cut(after, "\n")
	return line
}

// TestInitNextStepWorks: the next step every init prints works as pasted
// into a shell (here in directories whose names need quoting) and writes
// the certificate the party needs.
func TestInitNextStepWorks(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "up")); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(t.TempDir(), "a dir's")
	ca := filepath.Join(d, "ca")
	mustRun(t, "ca", "init", "--data", ca)
	for _, role := range []string{"node", "project", "client"} {
		t.Run(role, func(t *testing.T) {
			dir := filepath.Join(d, role)
			out := mustRun(t, role, "init", "--data", dir, "--ca", filepath.Join(ca, "ca.crt"), "--name", role+"1")
			next := nextCommand(t, out)
			sh := exec.Command("sh", "-c", next)
			sh.Env = append(os.Environ(), "UP_TEST_MAIN=1", "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
			if b, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("next step %q: %v: %s", next, err, b)
			}
			if _, err := os.Stat(filepath.Join(dir, role+".crt")); err != nil {
				t.Fatalf("next step wrote no certificate: %v", err)
			}
		})
	}
}

// TestInitRefusesBadNames: names that cannot be a keyword, a project
// share or a query term are refused at init, and nothing is left behind.
func TestInitRefusesBadNames(t *testing.T) {
	d := t.TempDir()
	ca := filepath.Join(d, "ca")
	mustRun(t, "ca", "init", "--data", ca)
	for _, role := range []string{"node", "project", "client"} {
		for _, name := range []string{"my project", "a:b", "a=b", "a,b", "(x)", "AND", "OR", "NOT", "tab\there", strings.Repeat("x", 65)} {
			dir := filepath.Join(d, "fresh")
			code, _, errs := upRun(t, role, "init", "--data", dir, "--ca", filepath.Join(ca, "ca.crt"), "--name", name)
			if code != 2 || !strings.Contains(errs, "--name") || strings.Count(errs, "\n") != 1 {
				t.Errorf("%s init --name %q: exit %d, stderr %q; want a one-line usage error naming --name", role, name, code, errs)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s init --name %q left %s behind", role, name, dir)
				os.RemoveAll(dir)
			}
		}
		mustRun(t, role, "init", "--data", filepath.Join(d, role+"-ok"), "--ca", filepath.Join(ca, "ca.crt"), "--name", "alice-laptop_2.eu")
	}
	fresh := filepath.Join(d, "net")
	if code, _, errs := upRun(t, "testnet", "init", "--dir", fresh, "--project", "my project"); code != 2 || !strings.Contains(errs, "--project") {
		t.Errorf("testnet init --project 'my project': exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("testnet init left %s behind", fresh)
	}
}

// TestVersion: 'up version' and 'up --version' print the same line with
// the version and the commit; cobra's completion command is there.
func TestVersion(t *testing.T) {
	_, a, _ := upRun(t, "version")
	code, b, errs := upRun(t, "--version")
	if code != 0 || a != b || !strings.HasPrefix(a, "up ") || !strings.Contains(a, "commit ") || strings.Count(a, "\n") != 1 {
		t.Fatalf("'up version' %q, 'up --version' %q (exit %d, stderr %q); want the same line with the commit", a, b, code, errs)
	}
	code, out, errs := upRun(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("up completion bash: exit %d, stderr %q", code, errs)
	}
}

// findCmd returns the command at path under a fresh root.
func findCmd(t *testing.T, path ...string) *cobra.Command {
	t.Helper()
	c, _, err := newRoot(os.Stdout, os.Stderr).Find(path)
	if err != nil || c.Name() != path[len(path)-1] {
		t.Fatalf("no command %v: %v", path, err)
	}
	return c
}

// TestFlagNames: one name for one thing across commands; the old
// spellings still work but are hidden.
func TestFlagNames(t *testing.T) {
	for _, c := range []struct {
		path      []string
		name, old string
	}{
		{[]string{"ca", "init"}, "data", "dir"},
		{[]string{"ca", "issue"}, "data", "dir"},
		{[]string{"ca", "revoke"}, "data", "dir"},
		{[]string{"bench"}, "replication", "r"},
	} {
		cmd := findCmd(t, c.path...)
		f, old := cmd.Flags().Lookup(c.name), cmd.Flags().Lookup(c.old)
		if f == nil || f.Hidden {
			t.Errorf("up %s has no visible --%s", strings.Join(c.path, " "), c.name)
		}
		if old == nil || !old.Hidden {
			t.Errorf("up %s: the old --%s is gone or visible", strings.Join(c.path, " "), c.old)
		}
	}
	// Long-running commands log in either format; where both bootstrap
	// flags exist they say the same.
	var bootHelp, fileHelp string
	for _, path := range [][]string{{"node", "run"}, {"client", "run"}, {"project", "submit"}, {"project", "harvest"}} {
		cmd := findCmd(t, path...)
		if cmd.Flags().Lookup("log-format") == nil {
			t.Errorf("up %s has no --log-format", strings.Join(path, " "))
		}
		if path[0] == "node" {
			continue // a node may rejoin through the peers it remembered
		}
		b, bf := cmd.Flags().Lookup("bootstrap").Usage, cmd.Flags().Lookup("bootstrap-file").Usage
		if bootHelp == "" {
			bootHelp, fileHelp = b, bf
		}
		if b != bootHelp || bf != fileHelp || !strings.Contains(b, "--bootstrap-file") {
			t.Errorf("up %s: --bootstrap %q, --bootstrap-file %q: want the same help everywhere, naming the alternative", strings.Join(path, " "), b, bf)
		}
	}
	// The aliases work.
	d := t.TempDir()
	mustRun(t, "ca", "init", "--dir", filepath.Join(d, "old"))
	mustRun(t, "ca", "init", "--data", filepath.Join(d, "new"))
}

// TestCARevokeAgain: revoking a certificate already revoked says so and
// leaves the list as it was.
func TestCARevokeAgain(t *testing.T) {
	f := newFixture(t)
	cert := filepath.Join(f.n1, "node.crt")
	mustRun(t, "ca", "revoke", "--data", f.ca, "--cert", cert)
	before, err := os.ReadFile(filepath.Join(f.ca, "crl.pem"))
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "ca", "revoke", "--data", f.ca, "--cert", cert)
	if !strings.Contains(out, "already revoked") {
		t.Errorf("second revoke printed %q, want it to say the certificate is already revoked", out)
	}
	after, _ := os.ReadFile(filepath.Join(f.ca, "crl.pem"))
	if string(before) != string(after) {
		t.Error("revoking an already revoked certificate signed a new list")
	}
}

// TestVersionLine: the version and commit come from -ldflags, else the
// build information, else say they are unknown.
func TestVersionLine(t *testing.T) {
	info := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/up-pool/up", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name, setVersion, setCommit string
		bi                          *debug.BuildInfo
		want                        string
	}{
		{"module version and commit", "", "", info("v1.2.3", "vcs.revision", rev, "vcs.modified", "false"), "v1.2.3 (commit 0123456789ab, go1.26.8)"},
		{"modified tree", "", "", info("v1.2.3", "vcs.revision", rev, "vcs.modified", "true"), "v1.2.3 (commit 0123456789ab, modified, go1.26.8)"},
		{"-buildvcs=false", "", "", info("(devel)"), "devel (commit unknown, go1.26.8)"},
		{"ldflags win", "v9", "abc", info("v1.2.3", "vcs.revision", rev, "vcs.modified", "true"), "v9 (commit abc, go1.26.8)"},
		{"ldflags version only", "v9", "", info("(devel)", "vcs.revision", rev), "v9 (commit 0123456789ab, go1.26.8)"},
		{"no build info", "", "", nil, "devel (commit unknown, " + runtime.Version() + ")"},
	} {
		if got := versionLine(c.setVersion, c.setCommit, c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSubmitJobFileErrors: a bad job file is refused before any network
// with one line naming the file and the field.
func TestSubmitJobFileErrors(t *testing.T) {
	d := t.TempDir()
	for _, c := range []struct{ file, content, mention string }{
		{"empty.yaml", "", "empty"},
		{"typo.yaml", "app: noop\nargz: [x]\n", `line 2: unknown field "argz"`},
		{"zero.yaml", "app: noop\ncopies: 0\n", "copies 0"},
		{"unused.yaml", "app: noop\nsweep:\n  i: [1, 2]\n", "no argument or input file uses {i}"},
	} {
		path := writeFile(t, filepath.Join(d, c.file), c.content)
		code, _, errs := upRun(t, "project", "submit", "--data", filepath.Join(d, "nowhere"), "--bootstrap", testBoot, path)
		if code != 1 || !strings.Contains(errs, "job file "+path+": ") || !strings.Contains(errs, c.mention) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want one line naming the file and %q", c.file, code, errs, c.mention)
		}
	}
}
