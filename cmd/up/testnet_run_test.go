package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/scenario"
)

func TestRunFlags(t *testing.T) {
	base := func() runFlags {
		f := defaultRunFlags()
		f.set = map[string]bool{}
		return f
	}
	for _, tc := range []struct {
		name  string
		edit  func(*runFlags)
		bad   string // substring of the usage error; "" for a good line
		check func(scenario.Options) bool
	}{
		{"defaults", func(*runFlags) {}, "", func(o scenario.Options) bool {
			return o.Scenario == "dynamic" && o.Nodes == 32 && o.Seed == 1 && o.Jobs == 0 && o.Rate == 0 && o.Dir == "" &&
				o.Timeout == 15*time.Minute
		}},
		{"dir", func(f *runFlags) { f.dir = "d" }, "", func(o scenario.Options) bool { return o.Dir == "d" }},
		{"static with jobs and rate", func(f *runFlags) {
			f.scenario, f.jobs, f.rate = "static", 500, 20
			f.set["jobs"], f.set["rate"] = true, true
		}, "", func(o scenario.Options) bool { return o.Jobs == 500 && o.Rate == 20 }},
		{"dynamic duration and job length", func(f *runFlags) {
			f.duration, f.jobLength = 3*time.Minute, 0
			f.set["duration"], f.set["job-length"] = true, true
		}, "", func(o scenario.Options) bool {
			return o.Duration == 3*time.Minute && o.JobLength == time.Millisecond
		}},
		{"adversary", func(f *runFlags) {
			f.adv = testnet.Adversary{Byzantine: 0.1, Behaviours: []string{"deny", "forge-states"}, Skewed: 0.3, Skew: 4 * time.Minute, Jump: 0.05}
		}, "", func(o scenario.Options) bool {
			return o.Adversary.Byzantine == 0.1 && len(o.Adversary.Behaviours) == 2 && o.Adversary.Skew == 4*time.Minute && o.Adversary.Jump == 0.05
		}},
		{"unknown behaviour", func(f *runFlags) {
			f.adv = testnet.Adversary{Byzantine: 0.1, Behaviours: []string{"lie"}}
		}, `behaviour "lie" unknown`, nil},
		{"churn lifetime", func(f *runFlags) {
			f.scenario, f.churn = "churn", 2*time.Minute
			f.set["churn"] = true
		}, "", func(o scenario.Options) bool { return o.ChurnLife == 2*time.Minute }},
		{"scale and clients", func(f *runFlags) {
			f.scale, f.clients = 10, 4
			f.set["scale"], f.set["clients"] = true, true
		}, "", func(o scenario.Options) bool { return o.Scale == 10 && o.Clients == 4 }},
		{"thousand nodes", func(f *runFlags) { f.nodes = 1000 }, "", func(o scenario.Options) bool { return o.Nodes == 1000 }},
		{"unknown scenario", func(f *runFlags) { f.scenario = "trace" }, "unknown scenario", nil},
		{"four nodes", func(f *runFlags) { f.nodes = 4 }, "--nodes 4 below 5", nil},
		{"too many nodes", func(f *runFlags) { f.nodes = 5000 }, "--nodes 5000 above", nil},
		{"jobs on a dynamic workload", func(f *runFlags) { f.jobs = 10; f.set["jobs"] = true }, "--jobs applies to the static", nil},
		{"zero jobs", func(f *runFlags) { f.scenario = "static"; f.set["jobs"] = true }, "--jobs 0", nil},
		{"zero rate", func(f *runFlags) { f.set["rate"] = true }, "--rate 0", nil},
		{"duration on a static workload", func(f *runFlags) {
			f.scenario, f.duration = "static", time.Minute
			f.set["duration"] = true
		}, "--duration and --job-length apply", nil},
		{"short duration", func(f *runFlags) { f.duration = time.Millisecond; f.set["duration"] = true }, "--duration 1ms", nil},
		{"negative job length", func(f *runFlags) { f.jobLength = -time.Second; f.set["job-length"] = true }, "--job-length -1s", nil},
		{"no clients", func(f *runFlags) { f.set["clients"] = true }, "--clients 0", nil},
		{"scale below 1", func(f *runFlags) { f.scale = 0.5; f.set["scale"] = true }, "--scale 0.5", nil},
		{"churn without churn", func(f *runFlags) { f.churn = time.Minute; f.set["churn"] = true }, "--churn applies", nil},
		{"tiny churn", func(f *runFlags) {
			f.scenario, f.churn = "churn-dynamic", time.Millisecond
			f.set["churn"] = true
		}, "--churn 1ms below 1s", nil},
		{"negative timeout", func(f *runFlags) { f.timeout = -time.Second }, "--timeout", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			tc.edit(&f)
			o, err := f.options()
			if tc.bad != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.bad) || strings.Contains(err.Error(), "\n") {
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

// TestRunFlagsParsed: a flag given on the command line counts even when
// it is its zero value; one not given leaves the scenario's default.
func TestRunFlagsParsed(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		bad   string // substring of the usage error; "" for a good line
		check func(scenario.Options) bool
	}{
		{nil, "", func(o scenario.Options) bool {
			return o.Scenario == "dynamic" && o.Nodes == 32 && o.JobLength == 0 && o.Clients == 0 && o.Timeout == 15*time.Minute
		}},
		{[]string{"--job-length", "0s"}, "", func(o scenario.Options) bool { return o.JobLength == time.Millisecond }},
		{[]string{"--byzantine", "0.1", "--behaviours", "deny,forge-states", "--skewed", "0.3", "--skew", "4m", "--jump", "0.05"}, "",
			func(o scenario.Options) bool {
				return o.Adversary.Byzantine == 0.1 && slices.Equal(o.Adversary.Behaviours, []string{"deny", "forge-states"}) &&
					o.Adversary.Skewed == 0.3 && o.Adversary.Skew == 4*time.Minute && o.Adversary.Jump == 0.05
			}},
		{[]string{"--scenario", "static", "--jobs", "0"}, "--jobs 0 out of", nil},
		{[]string{"--clients", "0"}, "--clients 0 out of", nil},
		{[]string{"--scale", "0"}, "--scale 0 out of", nil},
		{[]string{"--timeout", "-1s"}, "--timeout -1s is negative", nil},
	} {
		fl := defaultRunFlags()
		fs := parseFlags(t, func(fs *pflag.FlagSet) { bindRunFlags(fs, &fl) }, tc.args...)
		fl.set = changedFlags(fs, runSetFlags...)
		o, err := fl.options()
		switch {
		case tc.bad != "" && (!isUsage(err) || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%q: err %v, want a usage error about %s", tc.args, err, tc.bad)
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.bad == "" && !tc.check(o):
			t.Errorf("%q: options %+v", tc.args, o)
		}
	}
}

// TestRunCommandBadFlags checks the exit status and the one-line message
// of a bad command line, without starting any node.
func TestRunCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"testnet", "run", "--scenario", "nope"},
		{"testnet", "run", "--nodes", "3"},
		{"testnet", "run", "--scenario", "static", "--duration", "1m"},
	} {
		code, _, errs := upRun(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "up testnet run --help") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestRunHelpListsBehaviours: `up testnet run --help` names every
// Byzantine behaviour with its line.
func TestRunHelpListsBehaviours(t *testing.T) {
	long := newTestnetRunCmd().Long
	for _, b := range testnet.Behaviours {
		if !strings.Contains(long, b+" ") || !strings.Contains(long, testnet.BehaviourHelp[b]) {
			t.Errorf("help does not list %s", b)
		}
	}
}
