package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TestNodeRunNoBalance: --no-balance turns automatic balancing off; the
// old spelling, a negative --balance-interval, still does, with a
// deprecation note on stderr.
func TestNodeRunNoBalance(t *testing.T) {
	base := nodeRunFlags{data: "d", logLevel: "info", logFormat: "text", r: 5}
	for _, tc := range []struct {
		name       string
		noBalance  bool
		interval   time.Duration
		off        bool
		deprecated bool
	}{
		{"default", false, 0, false, false},
		{"interval", false, time.Minute, false, false},
		{"no-balance", true, 0, true, false},
		{"negative interval", false, -time.Second, true, true},
	} {
		fl := base
		fl.noBalance, fl.balance = tc.noBalance, tc.interval
		var stderr bytes.Buffer
		cfg, err := fl.config(&stderr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cfg.Balance.Off != tc.off || cfg.Balance.Interval != tc.interval {
			t.Errorf("%s: Off %v, Interval %s", tc.name, cfg.Balance.Off, cfg.Balance.Interval)
		}
		if got := strings.Contains(stderr.String(), "deprecated; use --no-balance"); got != tc.deprecated {
			t.Errorf("%s: stderr %q", tc.name, stderr.String())
		}
	}
	fl := base
	fl.balance = time.Microsecond
	if _, err := fl.config(io.Discard); err == nil || !strings.Contains(err.Error(), "--balance-interval 1µs is below 1ms") {
		t.Errorf("interval of 1µs: %v", err)
	}
}
