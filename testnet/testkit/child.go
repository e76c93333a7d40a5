package testkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// execEnv, set to 1, makes a test binary whose TestMain is ExecMain run
// an application as `up app exec` does, instead of its tests.
const execEnv = "UP_RUNNER_EXEC"

// ExecMain is a TestMain for packages whose tests run applications
// through a runner launching the test binary itself (Launcher,
// LauncherEnv): in such a child it runs exec (runner.Exec, passed in so
// this package links no runner) on the arguments and exits with its
// code; otherwise it runs the tests.
func ExecMain(m *testing.M, exec func(args []string, stdout, stderr io.Writer) int) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(exec(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Launcher is the launcher command for a runner (runner.Config.Launcher)
// whose applications a test binary with ExecMain runs: the binary itself.
func Launcher() []string { return []string{os.Args[0]} }

// LauncherEnv is the environment to launch it with
// (runner.Config.Env): what makes ExecMain run the application.
func LauncherEnv() []string { return []string{execEnv + "=1"} }

// ChildCommand is a command that runs this test binary's test named test
// alone (-test.run=^test$ -test.v, then extra flags), with env added to
// this process's environment: how a test runs a party in a process of
// its own. The child test tells it is one by its environment, and skips
// itself when run with the others.
func ChildCommand(test string, env []string, extra ...string) *exec.Cmd {
	args := append([]string{"-test.run=^" + test + "$", "-test.v"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// ReportPrefix starts the line a child process reports on (Report).
const ReportPrefix = "CHILD "

// Report prints v, JSON encoded, as the child's report line on stdout.
func Report(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s%s\n", ReportPrefix, b)
	return err
}

// RunChild runs cmd (a ChildCommand) to its end and decodes its report
// line (its last, if it printed several) into v. The child's stderr goes
// to this process's unless cmd names another. It fails when the child
// fails or reports nothing.
func RunChild(cmd *exec.Cmd, v any) error {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	found, readErr := readReport(out, v)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("child %s: %w", strings.Join(cmd.Args[1:], " "), err)
	}
	if readErr != nil {
		return readErr
	}
	if !found {
		return fmt.Errorf("child %s printed no report line", strings.Join(cmd.Args[1:], " "))
	}
	return nil
}

// readReport reads a child's output to its end and decodes its last
// report line into v; it reports whether there was one.
func readReport(r io.Reader, v any) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	found := false
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), ReportPrefix); ok {
			if err := json.Unmarshal([]byte(rest), v); err != nil {
				return true, fmt.Errorf("child report: %w", err)
			}
			found = true
		}
	}
	return found, sc.Err()
}
