package demo_test

import (
	"testing"

	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
)

// TestMain doubles as `up app exec` when the demo's clients launch it.
func TestMain(m *testing.M) { testkit.ExecMain(m, runner.Exec) }
