package project_test

import (
	"os"
	"testing"

	"github.com/up-pool/up/runner"
)

// TestMain doubles as `up app exec` when the workers' runner launches it.
func TestMain(m *testing.M) {
	if os.Getenv("UP_RUNNER_EXEC") == "1" {
		os.Exit(runner.Exec(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
