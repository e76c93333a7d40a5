// Package testkit holds the helpers the module's tests share: waiting for
// a condition, running the test binary as a child process (an
// application the runner launches, or a party in its own process) and
// reading the process's CPU time. It imports nothing outside the standard
// library, so the tests of every package, those inside overlay and store
// included, can use it without an import cycle; the fixtures that need a
// network (a started testnet with a project and jobs, the no-double-claim
// check) are in package testnet.
package testkit

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor and Poll test their condition.
const pollEvery = 10 * time.Millisecond

// WaitFor polls cond until it holds, and fails the test when timeout
// passes first, saying it was waiting for what.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Poll polls cond until it holds or timeout passes, and reports whether
// it held. cond is always tested at least once, and once more at the end.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pollEvery)
	}
	return true
}
