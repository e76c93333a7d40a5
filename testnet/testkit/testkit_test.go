package testkit_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/testkit"
)

// TestPoll: Poll returns true as soon as the condition holds, and false
// once the timeout has passed without it.
func TestPoll(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holdsAt int // the call from which cond holds; 0: never
		want    bool
	}{{"at once", 1, true}, {"on the third call", 3, true}, {"never", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			start := time.Now()
			got := testkit.Poll(50*time.Millisecond, func() bool {
				calls++
				return tc.holdsAt > 0 && calls >= tc.holdsAt
			})
			if got != tc.want {
				t.Fatalf("Poll = %v after %d calls, want %v", got, calls, tc.want)
			}
			if !tc.want && time.Since(start) < 50*time.Millisecond {
				t.Fatalf("gave up after %v, before the timeout", time.Since(start))
			}
			if tc.want && calls != tc.holdsAt {
				t.Fatalf("%d calls, want %d", calls, tc.holdsAt)
			}
		})
	}
}

// fatalRecorder is a testing.TB whose Fatalf records instead of failing.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// TestWaitForFailsSayingWhat: WaitFor fails the test in one line naming
// what it waited for and how long.
func TestWaitForFailsSayingWhat(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	testkit.WaitFor(rec, 20*time.Millisecond, "the moon", func() bool { return false })
	if rec.msg != "timed out after 20ms waiting for the moon" {
		t.Fatalf("message %q", rec.msg)
	}
	rec.msg = ""
	testkit.WaitFor(rec, time.Second, "the sun", func() bool { return true })
	if rec.msg != "" {
		t.Fatalf("failed though the condition held: %q", rec.msg)
	}
}

// childReport is what TestChildReports prints.
type childReport struct {
	Arg string `json:"arg"`
	CPU int64  `json:"cpu_ns"`
}

// TestChildReports is the child process of TestChildCommand.
func TestChildReports(t *testing.T) {
	arg := os.Getenv("UP_TESTKIT_CHILD")
	if arg == "" {
		t.Skip("the child process of TestChildCommand")
	}
	fmt.Println("some other output")
	if arg == "fail" {
		t.Fatal("asked to fail")
	}
	if err := testkit.Report(childReport{Arg: arg, CPU: int64(testkit.CPUTime())}); err != nil {
		t.Fatal(err)
	}
}

// TestChildCommand: a test run as a child process, told what to do by
// its environment, reports back a line the parent decodes; a child that
// reports nothing, or fails, is an error.
func TestChildCommand(t *testing.T) {
	var rep childReport
	if err := testkit.RunChild(testkit.ChildCommand("TestChildReports", []string{"UP_TESTKIT_CHILD=hello"}), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Arg != "hello" || rep.CPU < 0 {
		t.Fatalf("report %+v", rep)
	}
	silent := testkit.ChildCommand("TestChildReports", nil) // skips itself: no report
	if err := testkit.RunChild(silent, &rep); err == nil || !strings.Contains(err.Error(), "no report") {
		t.Fatalf("a child without a report: %v", err)
	}
	failing := testkit.ChildCommand("TestChildReports", []string{"UP_TESTKIT_CHILD=fail"})
	if err := testkit.RunChild(failing, &rep); err == nil {
		t.Fatal("a failing child passed")
	}
}

// TestWasmModule: a command builds to a WebAssembly module (its magic
// number), once per test binary.
func TestWasmModule(t *testing.T) {
	const pkg = "github.com/up-pool/up/apps/wasm/hashchain"
	m := testkit.WasmModule(t, pkg)
	if !bytes.HasPrefix(m, []byte("\x00asm")) {
		t.Fatalf("module starts with %q, want the WebAssembly magic", m[:min(4, len(m))])
	}
	if again := testkit.WasmModule(t, pkg); &again[0] != &m[0] {
		t.Error("the module was built twice")
	}
}
