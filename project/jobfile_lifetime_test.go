package project

import (
	"strings"
	"testing"
	"time"
)

// TestJobFileLifetime: a job file's lifetime (Go durations, or whole days
// as "14d") reaches every unit; without one, units take DefaultLifetime.
func TestJobFileLifetime(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
	}{
		{"", DefaultLifetime},
		{"lifetime: 72h\n", 72 * time.Hour},
		{"lifetime: 3d\n", 72 * time.Hour},
		{"lifetime: 90m\n", 90 * time.Minute},
	} {
		units, _, err := ParseJobFile([]byte("app: a\nkeywords: [k]\nt_finish: 1h\n"+tc.line), "")
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if units[0].Lifetime != tc.want {
			t.Errorf("%q: lifetime %s, want %s", tc.line, units[0].Lifetime, tc.want)
		}
	}
	for _, tc := range []struct{ line, mention string }{
		{"lifetime: soon\n", "lifetime"},
		{"lifetime: -2h\n", "lifetime"},
		{"lifetime: 30m\n", "t_finish"},
		{"lifetime: 400d\n", "366"},
	} {
		_, _, err := ParseJobFile([]byte("app: a\nkeywords: [k]\nt_finish: 1h\n"+tc.line), "")
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%q: %v, want an error mentioning %q", tc.line, err, tc.mention)
		}
	}
}
