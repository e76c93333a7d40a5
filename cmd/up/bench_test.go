package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/testnet/bench"
)

// parseFlags registers flags on a fresh flag set with bind and parses
// args into them, as cobra does before RunE.
func parseFlags(t *testing.T, bind func(*pflag.FlagSet), args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return fs
}

// TestBenchFlags: 'up bench' command lines turn into bench options, the
// defaults included; each bad value is a one-line usage error naming its
// flag.
func TestBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		bad   string // substring of the usage error; "" for a good line
		check func(bench.Options) bool
	}{
		{"defaults", nil, "", func(o bench.Options) bool {
			return o.Nodes == 16 && o.R == 5 && o.Clients == 4 && o.Slots == 2 && o.ClaimMany == 0 && o.Jobs == 500 && o.Keywords == 1 &&
				o.Copies == 1 && o.Batch == 32 && o.Rate == 0 && o.Window == 0 && o.Exec == bench.ExecInProcess &&
				o.Seed == 1 && o.Timeout == 5*time.Minute && o.TCollect == 0 && o.Dir == "" && o.ProjectShare && o.HarvestEvery == 0 &&
				slices.Equal(o.Launcher, []string{"/bin/up", "app", "exec"})
		}},
		{"a larger run", []string{"--nodes", "32", "--clients", "8", "--jobs", "2000", "--rate", "200", "--json"}, "",
			func(o bench.Options) bool {
				return o.Nodes == 32 && o.Clients == 8 && o.Jobs == 2000 && o.Rate == 200
			}},
		{"old --r", []string{"--r", "3"}, "", func(o bench.Options) bool { return o.R == 3 }},
		{"claim many", []string{"--claim-many", "8"}, "", func(o bench.Options) bool { return o.ClaimMany == 8 }},
		{"one job a claim", []string{"--claim-many", "1"}, "", func(o bench.Options) bool { return o.ClaimMany == 1 }},
		{"claim too many", []string{"--claim-many", "33"}, "--claim-many 33 out of 0..32", nil},
		{"negative claim many", []string{"--claim-many", "-1"}, "--claim-many -1 out of 0..32", nil},
		{"no share", []string{"--no-share"}, "", func(o bench.Options) bool { return !o.ProjectShare }},
		{"dir", []string{"--dir", "d"}, "", func(o bench.Options) bool { return o.Dir == "d" }},
		{"subprocess", []string{"--exec", "subprocess", "--copies", "2", "--tcollect", "1m"}, "", func(o bench.Options) bool {
			return o.Exec == bench.ExecSubprocess && o.Copies == 2 && o.TCollect == time.Minute
		}},
		{"mid-run heap profiles", []string{"--memprofile", "h.pb", "--memprofile-every", "50000"}, "", func(o bench.Options) bool {
			return o.HeapProfileEvery == 50000
		}},
		{"heap profiles without a file", []string{"--memprofile-every", "100"}, "--memprofile-every 100: needs --memprofile", nil},
		{"negative heap profile count", []string{"--memprofile", "h.pb", "--memprofile-every", "-1"}, "--memprofile-every -1: needs", nil},
		{"zero nodes", []string{"--nodes", "0"}, "--nodes 0: must be at least 1", nil},
		{"zero replication", []string{"--replication", "0"}, "--replication 0: must be at least 1", nil},
		{"zero clients", []string{"--clients", "0"}, "--clients 0: must be at least 1", nil},
		{"zero slots", []string{"--slots", "0"}, "--slots 0: must be at least 1", nil},
		{"zero jobs", []string{"--jobs", "0"}, "--jobs 0: must be at least 1", nil},
		{"zero keywords", []string{"--keywords", "0"}, "--keywords 0: must be at least 1", nil},
		{"zero copies", []string{"--copies", "0"}, "--copies 0: must be at least 1", nil},
		{"zero batch", []string{"--batch", "0"}, "--batch 0: must be at least 1", nil},
		{"zero timeout", []string{"--timeout", "0s"}, "--timeout 0s: must be positive", nil},
		{"too many nodes", []string{"--nodes", "300"}, "--nodes 300 out of r..256", nil},
		{"jobs not a multiple of copies", []string{"--copies", "3"}, "--jobs 500 is not a multiple of copies 3", nil},
		{"unknown exec", []string{"--exec", "docker"}, `--exec "docker": want inproc or subprocess`, nil},
		{"negative rate", []string{"--rate", "-1"}, "--rate -1 out of", nil},
		{"negative tcollect", []string{"--tcollect", "-1s"}, "T_collect -1s is negative", nil},
		{"harvest cadence", []string{"--harvest-every", "500ms", "--window", "2048"}, "", func(o bench.Options) bool {
			return o.HarvestEvery == 500*time.Millisecond && o.Window == 2048
		}},
		{"negative harvest cadence", []string{"--harvest-every", "-1s"}, "--harvest-every -1s out of 0..1m", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := defaultBenchFlags()
			parseFlags(t, func(fs *pflag.FlagSet) { bindBenchFlags(fs, &fl) }, tc.args...)
			o, err := fl.options("/bin/up")
			if tc.bad != "" {
				if err == nil || !isUsage(err) || !strings.Contains(err.Error(), tc.bad) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want a one-line usage error about %s", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Fatalf("options %+v", o)
			}
		})
	}
}
