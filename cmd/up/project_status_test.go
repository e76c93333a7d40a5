package main

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
)

// TestProjectStatusStuck: `up project status` flags the submitted jobs
// no client returned a result for in far longer than their T_finish, with
// their application, keywords and a hint, and leaves the others alone.
func TestProjectStatusStuck(t *testing.T) {
	dir := t.TempDir()
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	batch, _, err := l.Batch([]byte("d"), "jobs.yaml", 3, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range []struct {
		app     string
		tFinish time.Duration
		age     time.Duration
	}{
		{"foo", 10 * time.Minute, 2 * time.Hour},   // stuck
		{"hashchain", time.Hour, 90 * time.Minute}, // within twice its T_finish
		{"foo", 10 * time.Minute, 5 * time.Minute}, // too young
	} {
		spec := &job.Spec{Version: job.SpecVersion, Project: "lhc", App: j.app, Keywords: []string{"lhc"}, Resources: []string{"mem:small"},
			TFinish: j.tFinish.Milliseconds(), Created: now.UnixMilli(), Nonce: make([]byte, job.NonceLen),
			CertRef: make([]byte, job.CertRefLen), ResultKey: make([]byte, job.ResultKeyLen)}
		spec.Nonce[0] = byte(i)
		s, err := job.Sign(spec, key)
		if err != nil {
			t.Fatal(err)
		}
		unit, err := l.EnsureUnit(batch, i, 1)
		if err != nil {
			t.Fatal(err)
		}
		c := s.CID().String()
		at := now.Add(-j.age)
		if err := l.Prepare([]project.PreparedJob{{CID: c, Unit: unit, Signed: s.Encode(), Listing: []byte{1}}}, at); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkSubmitted(map[string]int{c: 5}, at); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	out := mustRun(t, "project", "status", "--data", dir)
	t.Logf("status:\n%s", out)
	var stuck []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "app '") {
			stuck = append(stuck, line)
		}
	}
	if len(stuck) != 1 || !strings.Contains(stuck[0], "1 of app 'foo' [lhc mem:small], T_finish 10m0s") ||
		!strings.Contains(stuck[0], "no client has run it in 2h0m0s: is application 'foo' allowed by volunteers") {
		t.Fatalf("stuck lines %q: want one, for the 2 h old job of 'foo' with its keywords and the hint", stuck)
	}
}

// TestProjectStatusLost: `up project status` counts the jobs declared
// lost on a line of their own, and --json as "lost"; a ledger without
// any prints no such line.
func TestProjectStatusLost(t *testing.T) {
	dir := t.TempDir()
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	batch, _, err := l.Batch([]byte("d"), "jobs.yaml", 3, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	var cids []string
	for i := range 3 {
		unit, err := l.EnsureUnit(batch, i, 1)
		if err != nil {
			t.Fatal(err)
		}
		c := fmt.Sprintf("job%d", i)
		if err := l.Prepare([]project.PreparedJob{{CID: c, Unit: unit, Signed: []byte{1}, Listing: []byte{1}}}, now); err != nil {
			t.Fatal(err)
		}
		cids = append(cids, c)
	}
	l.Close()
	if out := mustRun(t, "project", "status", "--data", dir); strings.Contains(out, "lost") {
		t.Fatalf("status of a ledger without lost jobs:\n%s\nwant no lost line", out)
	}
	l, err = project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	// Two jobs as a harvest leaves them when it declares them lost.
	if _, err := l.DB().Exec(`UPDATE jobs SET state = ? WHERE cid IN (?, ?)`, project.StateLost, cids[0], cids[1]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	out := mustRun(t, "project", "status", "--data", dir)
	t.Logf("status:\n%s", out)
	if !strings.Contains(out, "\nlost: 2 (no node could serve the result; each unit got another copy)\n") {
		t.Fatalf("status:\n%s\nwant the line 'lost: 2 (...)'", out)
	}
	var st struct {
		Lost int            `json:"lost"`
		Jobs map[string]int `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "project", "status", "--data", dir, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Lost != 2 || st.Jobs[project.StateLost] != 2 {
		t.Fatalf("status --json: lost %d, jobs %v; want 2 lost", st.Lost, st.Jobs)
	}
}
