package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimFaultFlags runs a small static scenario with Byzantine nodes and
// skewed clocks, and checks the fault line, the run's name, the fault
// table and plots, and the flags' usage errors.
func TestSimFaultFlags(t *testing.T) {
	out := t.TempDir()
	stdout := mustRun(t, "testnet", "sim", "--nodes", "64", "--jobs", "200", "--rate", "20",
		"--byzantine", "0.1", "--behaviours", "deny,forge,silent", "--skewed", "0.3", "--skew", "5m", "--out", out)
	if !strings.Contains(stdout, "faults: 10 % Byzantine (deny,forge,silent), 30 % skewed ±5m") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	for _, f := range []string{"static-200j-byz10-skew30-64-lb-off/summary.json", "faults.md", "faults.png", "faults-latency.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "faults.md"))
	if err != nil || !strings.Contains(string(md), "| static-200j-byz10-skew30 | 64 | 200 | 10 % | deny,forge,silent |") {
		t.Fatalf("faults.md (%v):\n%s", err, md)
	}
	for _, bad := range [][]string{{"--byzantine", "1.5"}, {"--skewed", "-0.1"}, {"--behaviours", "deny,lie"}, {"--skew", "-1m"}} {
		args := append([]string{"testnet", "sim", "--nodes", "8", "--out", out}, bad...)
		if code, _, errs := upRun(t, args...); code != 2 || !strings.Contains(errs, bad[0]) {
			t.Fatalf("%v: exit %d, stderr %q", bad, code, errs)
		}
	}
}
