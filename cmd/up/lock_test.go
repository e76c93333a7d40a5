package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/store"
)

// TestRunDataDirInUse: a node, client or project started on a data
// directory another process holds exits 1 saying so, and leaves the
// directory alone.
func TestRunDataDirInUse(t *testing.T) {
	f := newFixture(t)
	caCrt := filepath.Join(f.ca, "ca.crt")
	w1, proj := filepath.Join(f.dir, "w1"), filepath.Join(f.dir, "proj")
	mustRun(t, "client", "init", "--data", w1, "--ca", caCrt, "--name", "w1")
	mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "client", "--in", filepath.Join(w1, "client.csr"), "--out", filepath.Join(w1, "client.crt"))
	mustRun(t, "project", "init", "--data", proj, "--ca", caCrt, "--name", "lhc")
	mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "project", "--in", filepath.Join(proj, "project.csr"), "--out", filepath.Join(proj, "project.crt"))
	jobs := writeFile(t, filepath.Join(f.dir, "jobs.yaml"), "app: noop\nkeywords: [lhc]\n")
	boot := "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGGbiuEpRQ9Qe2Drsouy5vSbmokPneYDut8zRXSVvqVmp"
	// The other process: it holds the directory's lock and, for the
	// node, its open store.
	for _, d := range []string{f.n1, w1, proj} {
		l, err := keystore.LockDir(d)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
	}
	st, err := store.Open(filepath.Join(f.n1, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{f.n1, []string{"node", "run", "--data", f.n1, "--listen", "/ip4/127.0.0.1/tcp/0"}},
		{w1, []string{"client", "run", "--data", w1, "--bootstrap", boot, "--project", "lhc"}},
		{proj, []string{"project", "submit", "--data", proj, "--bootstrap", boot, jobs}},
	} {
		code, _, errs := upRun(t, c.args...)
		want := "data directory " + c.dir + " is in use by another process"
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("up %s: exit %d, stderr %q; want exit 1 saying %q", strings.Join(c.args[:2], " "), code, errs, want)
		}
	}
}
