//go:build linux || darwin

package runner_test

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
)

// TestExecInProcess runs Exec's paths that set no CPU or memory limit in
// the test process itself.
func TestExecInProcess(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--", "hashchain", "0", ""}, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n", ""},
		{[]string{"--wall", "1m", "--", "sleep", "0"}, 0, "slept\n", ""},
		{[]string{"--", "fail", "7"}, 7, "", ""},
		{[]string{"--", "sleep", "x"}, 1, "", "argument ms"},
		{[]string{"--", "nonesuch"}, runner.ExitNotFound, "", "nonesuch"},
		{[]string{"--", "/nonexistent/app"}, runner.ExitNotFound, "", "/nonexistent/app"},
		{[]string{"--cpu", "-1", "--", "noop"}, runner.ExitLauncher, "", "usage"},
		{[]string{"--bogus", "--", "noop"}, runner.ExitLauncher, "", "bogus"},
		{nil, runner.ExitLauncher, "", "usage"},
	} {
		var stdout, stderr bytes.Buffer
		code := runner.Exec(tc.args, &stdout, &stderr)
		if code != tc.code || stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("Exec(%q) = %d, stdout %q, stderr %q; want %d, %q, stderr containing %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestExecWallBackstop runs the launcher with no runner watching: its own
// backstop must end the application one second after --wall, with SIGKILL
// for a built-in and (Linux) SIGALRM for an external program.
func TestExecWallBackstop(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	for _, tc := range []struct {
		name string
		app  []string
		want syscall.Signal
	}{
		{"builtin", []string{"sleep", "10000"}, syscall.SIGKILL},
		{"external", []string{sleep, "10"}, syscall.SIGALRM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.want == syscall.SIGALRM && runtime.GOOS != "linux" {
				t.Skip("no backstop for external programs on " + runtime.GOOS)
			}
			cmd := exec.Command(exe, append([]string{"--wall", "100ms", "--"}, tc.app...)...)
			cmd.Env = append(os.Environ(), testkit.LauncherEnv()...)
			start := time.Now()
			err := cmd.Run()
			elapsed := time.Since(start)
			status, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if err == nil || !status.Signaled() || status.Signal() != tc.want || elapsed < time.Second || elapsed > 5*time.Second {
				t.Errorf("launcher ended after %v with %v (%v), want %v after 1.1s", elapsed, err, status, tc.want)
			}
		})
	}
}
