package main

import (
	"crypto/ed25519"
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
