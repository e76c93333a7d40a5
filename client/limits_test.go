package client

import (
	"runtime"
	"testing"
	"time"
)

// TestLimits: a job's wall-clock limit is 90 % of its T_finish; its CPU
// limit is the same, lowered to the client's MaxCPU when that is set.
func TestLimits(t *testing.T) {
	cases := []struct {
		tFinish       int64
		maxCPU        time.Duration
		wantWall, cpu time.Duration
	}{
		{10_000, 0, 9 * time.Second, 9 * time.Second},
		{10_000, time.Second, 9 * time.Second, time.Second},
		{10_000, time.Minute, 9 * time.Second, 9 * time.Second},
		{3_600_000, 30 * time.Minute, 54 * time.Minute, 30 * time.Minute},
	}
	for _, c := range cases {
		wall, cpu := limits(c.tFinish, c.maxCPU)
		if wall != c.wantWall || cpu != c.cpu {
			t.Errorf("limits(%d ms, %v) = %v, %v; want %v, %v", c.tFinish, c.maxCPU, wall, cpu, c.wantWall, c.cpu)
		}
	}
}

// TestWithPlatform: an unset platform is the running binary's; a set one
// is kept.
func TestWithPlatform(t *testing.T) {
	if a := (Attributes{}).withPlatform(); a.OS != runtime.GOOS || a.Arch != runtime.GOARCH {
		t.Errorf("defaults %s/%s, want %s/%s", a.OS, a.Arch, runtime.GOOS, runtime.GOARCH)
	}
	if a := (Attributes{OS: "plan9", Arch: "arm"}).withPlatform(); a.OS != "plan9" || a.Arch != "arm" {
		t.Errorf("set platform overridden: %s/%s", a.OS, a.Arch)
	}
}
