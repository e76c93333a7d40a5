package main

import (
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/client"
)

const testBoot = "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWGGbiuEpRQ9Qe2Drsouy5vSbmokPneYDut8zRXSVvqVmp"

// TestClientRunFlagsParse: clientRunFlags.parse accepts the README's and
// the help's forms and refuses each bad value with a usage error naming
// the flag.
func TestClientRunFlagsParse(t *testing.T) {
	base := func() clientRunFlags {
		return clientRunFlags{data: "w", bootstrap: []string{testBoot}, projects: []string{"lhc"}, slots: 2}
	}
	for _, c := range []struct {
		name    string
		edit    func(f *clientRunFlags)
		mention string // "" for valid
	}{
		{"minimal", func(f *clientRunFlags) {}, ""},
		{"bootstrap file only", func(f *clientRunFlags) { f.bootstrap, f.bootstrapFile = nil, "boot.txt" }, ""},
		{"README allow list", func(f *clientRunFlags) {
			f.projects = []string{"lhc:75", "cms:25"}
			f.allow = []string{"lhc=hashchain,mandelbrot", "cms=*"}
		}, ""},
		{"allow wasm", func(f *clientRunFlags) {
			f.projects = []string{"lhc", "cms"}
			f.allowWASM = []string{"cms", "lhc"}
		}, ""},
		{"allow wasm unattached", func(f *clientRunFlags) { f.allowWASM = []string{"cms"} }, `--allow-wasm "cms"`},
		{"allow wasm empty", func(f *clientRunFlags) { f.allowWASM = []string{""} }, "--allow-wasm"},
		{"allow wasm repeated", func(f *clientRunFlags) { f.allowWASM = []string{"lhc", "lhc"} }, "repeated"},
		{"allow wasm with apps", func(f *clientRunFlags) { f.allowWASM = []string{"lhc=x"} }, `--allow-wasm "lhc=x"`},
		{"one slot", func(f *clientRunFlags) { f.slots = 1 }, ""},
		{"most slots", func(f *clientRunFlags) { f.slots = 1024 }, ""},
		{"no data", func(f *clientRunFlags) { f.data = "" }, "--data"},
		{"no bootstrap", func(f *clientRunFlags) { f.bootstrap = nil }, "--bootstrap"},
		{"no project", func(f *clientRunFlags) { f.projects = nil }, "--project"},
		{"bad share", func(f *clientRunFlags) { f.projects = []string{"lhc:0"} }, `--project "lhc:0"`},
		{"repeated project", func(f *clientRunFlags) { f.projects = []string{"lhc", "lhc:5"} }, "repeated"},
		{"project name with a space", func(f *clientRunFlags) { f.projects = []string{"my project"} }, `--project "my project"`},
		{"allow without apps", func(f *clientRunFlags) { f.allow = []string{"lhc="} }, "--allow"},
		{"allow unattached", func(f *clientRunFlags) { f.allow = []string{"cms=x"} }, "not attached"},
		{"zero slots", func(f *clientRunFlags) { f.slots = 0 }, "--slots 0"},
		{"negative slots", func(f *clientRunFlags) { f.slots = -1 }, "--slots -1"},
		{"too many slots", func(f *clientRunFlags) { f.slots = 1025 }, "--slots 1025"},
		{"negative claim group", func(f *clientRunFlags) { f.claimMany = -1 }, "--claim-many -1"},
		{"claim group over the bound", func(f *clientRunFlags) { f.claimMany = 33 }, "--claim-many 33"},
		{"negative max jobs", func(f *clientRunFlags) { f.maxJobs = -1 }, "--max-jobs"},
		{"negative backoff", func(f *clientRunFlags) { f.backoffMax = -1 }, "--backoff-max"},
		{"relative exec", func(f *clientRunFlags) { f.external = []string{"a=bin/a"} }, "--exec"},
		{"bad memory", func(f *clientRunFlags) { f.memory = "lots" }, "--memory"},
		{"bad bandwidth", func(f *clientRunFlags) { f.bandwidth = "fast" }, "--bandwidth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := base()
			c.edit(&f)
			_, err := f.parse()
			switch {
			case c.mention == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.mention != "" && err == nil:
				t.Fatalf("accepted, want an error mentioning %q", c.mention)
			case c.mention != "" && !strings.Contains(err.Error(), c.mention):
				t.Fatalf("error %q does not mention %q", err, c.mention)
			case err != nil && !isUsage(err):
				t.Fatalf("error %q is not a usage error", err)
			}
		})
	}
}

// TestClientRunFlagsParsed: 'up client run' command lines, the defaults
// included, turn into the client's setup and configuration.
func TestClientRunFlagsParsed(t *testing.T) {
	need := []string{"--data", "w", "--bootstrap", testBoot, "--project", "lhc"}
	for _, tc := range []struct {
		name  string
		args  []string
		check func(clientSetup, client.Config) bool
	}{
		{"defaults", nil, func(s clientSetup, c client.Config) bool {
			return len(s.projects) == 1 && s.projects[0] == client.Project{Name: "lhc", Share: 100} && len(s.allow) == 0 && len(s.allowWASM) == 0 &&
				len(s.external) == 0 && s.memory == 0 && s.bw == 0 && c.Slots == runtime.NumCPU() && c.MaxJobs == 0 &&
				c.BackoffMin == time.Second && c.BackoffMax == 5*time.Minute && c.InputDir == filepath.Join("w", "inputs") &&
				len(c.Attributes.Exclude) == 0
		}},
		{"limits", []string{"--slots", "3", "--memory", "2GiB", "--bandwidth", "20Mbit", "--exclude", "bw:fast,gpu", "--max-jobs", "7"},
			func(s clientSetup, c client.Config) bool {
				return c.Slots == 3 && c.Attributes.Memory == 2<<30 && c.Attributes.Bandwidth == 20_000_000 &&
					slices.Equal(c.Attributes.Exclude, []string{"bw:fast", "gpu"}) && c.MaxJobs == 7
			}},
		{"WebAssembly", []string{"--project", "cms", "--allow-wasm", "cms", "--allow-wasm", "lhc", "--allow", "lhc=hashchain"},
			func(s clientSetup, c client.Config) bool {
				return slices.Equal(s.allowWASM, []string{"cms", "lhc"}) && slices.Equal(s.allow["lhc"], []string{"hashchain"}) && len(s.allow["cms"]) == 0
			}},
		{"short backoff", []string{"--backoff-max", "100ms"}, func(s clientSetup, c client.Config) bool {
			return c.BackoffMin == 100*time.Millisecond && c.BackoffMax == 100*time.Millisecond
		}},
		{"shares and applications", []string{"--project", "cms:25", "--allow", "cms=*", "--exec", "x=/opt/x"},
			func(s clientSetup, c client.Config) bool {
				return len(c.Projects) == 2 && c.Projects[1] == client.Project{Name: "cms", Share: 25} &&
					slices.Equal(s.allow["cms"], []string{"*"}) && s.external["x"] == "/opt/x"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := defaultClientRunFlags()
			parseFlags(t, func(fs *pflag.FlagSet) { bindClientRunFlags(fs, &fl) }, append(need, tc.args...)...)
			s, err := fl.parse()
			if err != nil {
				t.Fatal(err)
			}
			if c := fl.clientConfig(s, nil, nil, nil); !tc.check(s, c) {
				t.Fatalf("setup %+v, config %+v", s, c)
			}
		})
	}
}

func isUsage(err error) bool {
	_, ok := err.(usageError)
	return ok
}

// TestClientAllowForms: the README's '--allow lhc=hashchain,mandelbrot'
// and the help's unquoted '--allow cms=*' get past the command line to
// the data directory (which does not exist here).
func TestClientAllowForms(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "w1")
	code, _, errs := upRun(t, "client", "run", "--data", fresh, "--bootstrap", testBoot,
		"--project", "lhc:75", "--project", "cms:25", "--allow", "lhc=hashchain,mandelbrot", "--allow", "cms=*",
		"--exec", "x=/opt/a,b/x")
	if code != 1 || !strings.Contains(errs, "ca.crt") {
		t.Fatalf("exit %d, stderr %q; want the command line accepted and the missing data directory reported", code, errs)
	}
}
