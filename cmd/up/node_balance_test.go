package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestNodeRunNoBalance: --no-balance turns automatic balancing off; a
// negative --balance-interval, once a deprecated spelling of it, is a
// usage error naming the flag and pointing to --no-balance.
func TestNodeRunNoBalance(t *testing.T) {
	base := nodeRunFlags{data: "d", logLevel: "info", logFormat: "text", r: 5}
	for _, tc := range []struct {
		name      string
		noBalance bool
		interval  time.Duration
		off       bool
	}{
		{"default", false, 0, false},
		{"interval", false, time.Minute, false},
		{"no-balance", true, 0, true},
	} {
		fl := base
		fl.noBalance, fl.balance = tc.noBalance, tc.interval
		var stderr bytes.Buffer
		cfg, err := fl.config(&stderr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cfg.Balance.Off != tc.off || cfg.Balance.Interval != tc.interval || stderr.Len() != 0 {
			t.Errorf("%s: Off %v, Interval %s, stderr %q", tc.name, cfg.Balance.Off, cfg.Balance.Interval, stderr.String())
		}
	}
	fl := base
	fl.balance = -time.Second
	var ue usageError
	if _, err := fl.config(io.Discard); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--balance-interval -1s is negative (--no-balance") {
		t.Errorf("negative interval: %v", err)
	}
	fl.balance = time.Microsecond
	if _, err := fl.config(io.Discard); err == nil || !strings.Contains(err.Error(), "--balance-interval 1µs is below 1ms") {
		t.Errorf("interval of 1µs: %v", err)
	}
}
