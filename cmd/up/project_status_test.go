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
	cids := preparedLedger(t, dir, 3, time.Now())
	if out := mustRun(t, "project", "status", "--data", dir); strings.Contains(out, "lost") {
		t.Fatalf("status of a ledger without lost jobs:\n%s\nwant no lost line", out)
	}
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
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

// TestProjectStatusHarvestLatency: `up project status` prints the
// submit→harvest latency's median and 99th percentile over the results,
// and --json has them as harvest_p50_s, harvest_p99_s and harvest_timed;
// a ledger without results prints no such line.
func TestProjectStatusHarvestLatency(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	lat := []time.Duration{1200 * time.Millisecond, 3400 * time.Millisecond, 800 * time.Millisecond}
	preparedLedger(t, dir, len(lat), now)
	if out := mustRun(t, "project", "status", "--data", dir); strings.Contains(out, "submit→harvest") {
		t.Fatalf("status of a ledger without results:\n%s\nwant no submit→harvest line", out)
	}
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range lat {
		c, submitted := fmt.Sprintf("job%d", i), now.Add(time.Duration(i)*time.Minute)
		if err := l.MarkSubmitted(map[string]int{c: 5}, submitted); err != nil {
			t.Fatal(err)
		}
		r := project.Result{CID: c, Client: "w", ClientKey: []byte("w"), At: submitted.Add(d)}
		if err := l.RecordResults([]project.Result{r}, submitted.Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	out := mustRun(t, "project", "status", "--data", dir)
	t.Logf("status:\n%s", out)
	if !strings.Contains(out, "\nsubmit→harvest: p50 1.2 s, p99 3.4 s (3 results)\n") {
		t.Fatalf("status:\n%s\nwant the line 'submit→harvest: p50 1.2 s, p99 3.4 s (3 results)'", out)
	}
	var st struct {
		P50   *float64 `json:"harvest_p50_s"`
		P99   *float64 `json:"harvest_p99_s"`
		Timed int      `json:"harvest_timed"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "project", "status", "--data", dir, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.P50 == nil || *st.P50 != 1.2 || st.P99 == nil || *st.P99 != 3.4 || st.Timed != 3 {
		t.Fatalf("status --json: harvest_p50_s %v, harvest_p99_s %v, harvest_timed %d; want 1.2, 3.4, 3", st.P50, st.P99, st.Timed)
	}
}

// TestLatencySeconds: latencies print to the millisecond under 1 s, the
// tenth of a second under 10 s, the second above.
func TestLatencySeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.000"}, {12 * time.Millisecond, "0.012"}, {999 * time.Millisecond, "0.999"},
		{1200 * time.Millisecond, "1.2"}, {9940 * time.Millisecond, "9.9"}, {75 * time.Second, "75"}, {2 * time.Hour, "7200"},
	} {
		if got := latencySeconds(c.d); got != c.want {
			t.Errorf("latencySeconds(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// preparedLedger writes dir/ledger.db with one batch of n single-copy
// units, each with one prepared job "job<i>", and returns the jobs' CIDs.
func preparedLedger(t *testing.T, dir string, n int, now time.Time) []string {
	t.Helper()
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batch, _, err := l.Batch([]byte("d"), "jobs.yaml", n, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	var cids []string
	for i := range n {
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
	return cids
}
