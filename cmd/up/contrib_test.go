package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnitVerifies: contrib/systemd/up-node.service passes
// systemd-analyze verify (with ExecStart pointed at this test binary, as
// verify wants the command to exist), and runs 'up node run --config'.
// It skips where systemd-analyze is missing, and says so.
func TestSystemdUnitVerifies(t *testing.T) {
	b, err := os.ReadFile("../../contrib/systemd/up-node.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	if !strings.Contains(unit, "ExecStart=/usr/local/bin/up node run --config /var/lib/up/node/node.yaml") {
		t.Fatal("the unit does not run 'up node run --config' on the documented settings file")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit file is not verified here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "up-node.service")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(unit, "/usr/local/bin/up", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", p).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
