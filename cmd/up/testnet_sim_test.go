package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet/sim"
)

func TestSimFlags(t *testing.T) {
	base := func() simFlags {
		f := defaultSimFlags()
		f.out, f.set = "x", map[string]bool{}
		return f
	}
	for _, tc := range []struct {
		name  string
		edit  func(*simFlags)
		bad   string // substring of the usage error; "" for a good line
		check func(sim.Config) bool
	}{
		{"defaults", func(*simFlags) {}, "", func(c sim.Config) bool {
			return c.Workload == sim.Static && c.Nodes == 1024 && c.Seed == 1 && c.Jobs == 50_000 && c.Rate == 15 && c.R == 5 &&
				!c.Balance && c.Name == "static-50000j"
		}},
		{"limit", func(f *simFlags) { f.limit = time.Hour; f.set["limit"] = true }, "",
			func(c sim.Config) bool { return c.Limit == time.Hour && c.Name == "static-50000j" }},
		{"zero limit", func(f *simFlags) { f.set["limit"] = true }, "--limit", nil},
		{"too many nodes", func(f *simFlags) { f.nodes = 100_001 }, "--nodes", nil},
		{"bad behaviour", func(f *simFlags) { f.faults.behaviours = "lie" }, "--behaviours", nil},
		{"dynamic 30 jobs/s balancing", func(f *simFlags) {
			f.scenario, f.rate, f.balance = "dynamic", 30, "on"
			f.set["rate"] = true
		}, "", func(c sim.Config) bool { return c.Rate == 30 && c.Balance && c.Duration == 5*time.Hour }},
		{"churn 12h", func(f *simFlags) {
			f.scenario, f.churn = "churn", 12*time.Hour
			f.set["churn"] = true
		}, "", func(c sim.Config) bool { return c.ChurnLife == 12*time.Hour && c.ChurnDown == 12*time.Hour }},
		{"balance off overrides the preset", func(f *simFlags) { f.scenario, f.balance = "loadbalance", "off" }, "",
			func(c sim.Config) bool { return !c.Balance }},
		{"jobs and duration", func(f *simFlags) {
			f.jobs, f.duration = 100, time.Hour
			f.set["jobs"], f.set["duration"] = true, true
		}, "", func(c sim.Config) bool { return c.Jobs == 100 && c.Duration == time.Hour }},
		{"cooldown and no piggy-backing", func(f *simFlags) {
			f.scenario, f.coolDown, f.piggyback = "loadbalance-dynamic", 6*time.Minute, "off"
			f.set["cooldown"] = true
		}, "", func(c sim.Config) bool {
			return c.CoolDown == 6*time.Minute && c.NoPiggyback && strings.HasSuffix(c.Name, "-cd6m-nopb")
		}},
		{"wrate", func(f *simFlags) { f.wRate = 100; f.set["wrate"] = true }, "",
			func(c sim.Config) bool { return c.WRate == 100 && strings.HasSuffix(c.Name, "-wrate100") }},
		{"region bits", func(f *simFlags) { f.regionBits = 8; f.set["region-bits"] = true }, "",
			func(c sim.Config) bool { return c.RegionBits == 8 && strings.HasSuffix(c.Name, "-p8") }},
		{"region bits default", func(f *simFlags) { f.set["region-bits"] = true }, "",
			func(c sim.Config) bool {
				return c.RegionBits == keyspace.DefaultIndexBits && strings.HasSuffix(c.Name, fmt.Sprintf("-p%d", keyspace.DefaultIndexBits))
			}},
		{"region bits absent", func(*simFlags) {}, "", func(c sim.Config) bool { return c.RegionBits == keyspace.DefaultIndexBits }},
		{"region bits too many", func(f *simFlags) { f.regionBits = 65; f.set["region-bits"] = true }, "--region-bits", nil},
		{"negative region bits", func(f *simFlags) { f.regionBits = -1; f.set["region-bits"] = true }, "--region-bits", nil},
		{"no out", func(f *simFlags) { f.out = "" }, "--out", nil},
		{"zero cooldown", func(f *simFlags) { f.set["cooldown"] = true }, "--cooldown", nil},
		{"piggyback maybe", func(f *simFlags) { f.piggyback = "maybe" }, "--piggyback", nil},
		{"zero wrate", func(f *simFlags) { f.set["wrate"] = true }, "--wrate", nil},
		{"unknown scenario", func(f *simFlags) { f.scenario = "nope" }, "unknown scenario", nil},
		{"one node", func(f *simFlags) { f.nodes = 1 }, "--nodes", nil},
		{"zero rate", func(f *simFlags) { f.set["rate"] = true }, "--rate", nil},
		{"zero jobs", func(f *simFlags) { f.set["jobs"] = true }, "--jobs", nil},
		{"negative duration", func(f *simFlags) { f.duration = -time.Second; f.set["duration"] = true }, "--duration", nil},
		{"balance maybe", func(f *simFlags) { f.balance = "maybe" }, "--balance", nil},
		{"negative churn", func(f *simFlags) { f.churn = -time.Hour; f.set["churn"] = true }, "--churn", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			tc.edit(&f)
			c, err := f.config()
			if tc.bad != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err %v, want a usage error about %s", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("config %+v", c)
			}
		})
	}
}

// TestSimFlagsParsed: a flag given on the command line overrides the
// preset even when it is the flag's zero value; one not given does not.
func TestSimFlagsParsed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bad  string // substring of the usage error; "" for a good line
		name string // the run's name
	}{
		{[]string{"--out", "x"}, "", "static-50000j"},
		{[]string{"--out", "x", "--scenario", "churn", "--churn", "12h", "--jobs", "5000", "--nodes", "256"}, "", "churn-5000j-churn12h"},
		{[]string{"--out", "x", "--region-bits", "0"}, "", fmt.Sprintf("static-50000j-p%d", keyspace.DefaultIndexBits)},
		{[]string{"--out", "x", "--byzantine", "0.1", "--skewed", "0.3"}, "", "static-50000j-byz10-skew30"},
		{[]string{"--out", "x", "--jobs", "0"}, "--jobs 0 must be positive", ""},
		{[]string{"--out", "x", "--rate", "0"}, "--rate 0 out of", ""},
		{[]string{"--out", "x", "--cooldown", "0s"}, "--cooldown 0s must be positive", ""},
		{[]string{"--out", "x", "--byzantine", "2"}, "--byzantine 2 out of [0, 1]", ""},
		{[]string{"--nodes", "32"}, "--out is required", ""},
	} {
		fl := defaultSimFlags()
		fs := parseFlags(t, func(fs *pflag.FlagSet) { bindSimFlags(fs, &fl) }, tc.args...)
		fl.set = changedFlags(fs, simSetFlags...)
		c, err := fl.config()
		switch {
		case tc.bad != "" && (!isUsage(err) || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%q: err %v, want a usage error about %s", tc.args, err, tc.bad)
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.bad == "" && c.Name != tc.name:
			t.Errorf("%q: run %q, want %q", tc.args, c.Name, tc.name)
		}
	}
}

// TestSimCommand runs a tiny static scenario end to end and checks the
// files it writes.
func TestSimCommand(t *testing.T) {
	out := t.TempDir()
	stdout := mustRun(t, "testnet", "sim", "--scenario", "churn", "--nodes", "32", "--jobs", "60", "--rate", "20",
		"--churn", "24h", "--out", out)
	if !strings.Contains(stdout, "60 collected; 0 lost, 0 double claims") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	run := filepath.Join(out, "churn-60j-churn24h-32-lb-off")
	for _, f := range []string{"metrics.csv", "nodes.csv", "summary.json", "overview.png", "rpc.png", "bars.png"} {
		if st, err := os.Stat(filepath.Join(run, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	rep, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Beside the thesis", "4.1", "churn: zero jobs lost and zero double claims", "| pass |"} {
		if !strings.Contains(string(rep), want) {
			t.Fatalf("report.md lacks %q:\n%s", want, rep)
		}
	}
	if err := os.Remove(filepath.Join(out, "report.md")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "testnet", "sim", "--report-only", "--out", out)
	if again, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || string(again) != string(rep) {
		t.Fatalf("--report-only wrote a different report (%v)", err)
	}
	if code, _, errs := upRun(t, "testnet", "sim", "--scenario", "nope", "--out", out); code != 2 || !strings.Contains(errs, "unknown scenario") {
		t.Fatalf("bad scenario: exit %d, stderr %q", code, errs)
	}
}
