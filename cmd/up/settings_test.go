package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// testFlags is a flag set with one flag of each kind a daemon has.
func testFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("data", "", "data directory")
	fs.String("log-level", "info", "log level")
	fs.Int("replication", 5, "r")
	fs.Duration("republish", 0, "republish period")
	fs.Bool("no-balance", false, "no balancing")
	fs.StringSlice("listen", []string{"/ip4/0.0.0.0/tcp/4001"}, "listen addresses")
	fs.String("config", "", "settings file")
	return fs
}

func writeSettingsFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSettingsPrecedence: a flag on the command line beats the
// environment, which beats the file, which beats the default.
func TestSettingsPrecedence(t *testing.T) {
	file := writeSettingsFile(t, "data: /var/lib/up\nlog-level: warn\nreplication: 7\nrepublish: 10m\nno-balance: true\n"+
		"listen:\n  - /ip4/0.0.0.0/tcp/5001\n  - /ip4/0.0.0.0/udp/5001/quic-v1\n")
	fs := testFlags()
	if err := fs.Parse([]string{"--replication", "9"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"UP_LOG_LEVEL=debug", "HOME=/root", "UP_UNRELATED=1"}
	if err := applySettings(fs, file, env, "config"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"data":        "/var/lib/up", // file
		"log-level":   "debug",       // environment over file
		"replication": "9",           // command line over file
		"republish":   (10 * time.Minute).String(),
		"no-balance":  "true",
		"listen":      "[/ip4/0.0.0.0/tcp/5001,/ip4/0.0.0.0/udp/5001/quic-v1]",
		"config":      "", // never from a file
	} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// Without a file, defaults stay; a list from the environment is
	// comma-separated.
	fs = testFlags()
	if err := applySettings(fs, "", []string{"UP_LISTEN=/ip4/1.2.3.4/tcp/1, /ip4/1.2.3.4/tcp/2"}); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("listen").Value.String(); got != "[/ip4/1.2.3.4/tcp/1,/ip4/1.2.3.4/tcp/2]" {
		t.Errorf("listen from the environment = %s", got)
	}
	if got := fs.Lookup("replication").Value.String(); got != "5" {
		t.Errorf("replication = %s, want the default", got)
	}
}

// TestSettingsErrors: a bad file or value is one error naming where.
func TestSettingsErrors(t *testing.T) {
	for _, c := range []struct {
		file string
		env  []string
		want string
	}{
		{"data: d\nreplicaton: 5\n", nil, `:2: unknown setting "replicaton"`},
		{"replication: five\n", nil, `:1: replication: strconv.ParseInt: parsing "five"`},
		{"config: other.yaml\n", nil, `unknown setting "config"`},
		{"listen:\n  a: b\n", nil, "listen: want a value or a list"},
		{"- a\n- b\n", nil, "want a mapping"},
		{"data: [\n", nil, "yaml"},
		{"", []string{"UP_REPUBLISH=soon"}, `UP_REPUBLISH="soon"`},
	} {
		err := applySettings(testFlags(), writeSettingsFile(t, c.file), c.env, "config")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%q %v: error %v, want one line with %q", c.file, c.env, err, c.want)
		}
	}
	if err := applySettings(testFlags(), "/nonexistent/s.yaml", nil); err == nil {
		t.Error("a missing settings file is no error")
	}
}

// TestWrittenSettingsReadBack: the file 'up node init' writes names every
// setting of 'up node run' with a comment, and read back it changes
// nothing but data: the defaults it writes are the flags' defaults.
func TestWrittenSettingsReadBack(t *testing.T) {
	dir := t.TempDir()
	p, err := writeNodeSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	ref := newNodeRunCmd().Flags()
	ref.VisitAll(func(f *pflag.Flag) {
		if f.Name != "config" && !f.Hidden && f.Deprecated == "" && !strings.Contains(string(b), "\n"+f.Name+":") {
			t.Errorf("setting %s missing from the file", f.Name)
		}
	})
	cmd := newNodeRunCmd()
	if err := loadNodeSettings(cmd.Flags(), []string{"UP_CONFIG=" + p}); err != nil {
		t.Fatal(err)
	}
	ref.VisitAll(func(f *pflag.Flag) {
		got := cmd.Flags().Lookup(f.Name).Value.String()
		want := f.Value.String()
		if f.Name == "data" {
			want = dir
		}
		if got != want {
			t.Errorf("%s read back as %q, want %q", f.Name, got, want)
		}
	})
	// Written once: an edited file is kept by a second init.
	if err := os.WriteFile(p, []byte("data: edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := writeNodeSettings(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "data: edited\n" {
		t.Errorf("a second init rewrote the settings: %q", b)
	}
}

// TestNodeSettingsPath: --config, then UP_CONFIG, then DATA/node.yaml
// when it exists.
func TestNodeSettingsPath(t *testing.T) {
	dir := t.TempDir()
	fs := newNodeRunCmd().Flags()
	if got := nodeSettingsPath(fs, []string{"UP_DATA=" + dir}); got != "" {
		t.Errorf("no file: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, settingsFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := nodeSettingsPath(fs, []string{"UP_DATA=" + dir}); got != filepath.Join(dir, settingsFile) {
		t.Errorf("data's file: %q", got)
	}
	if got := nodeSettingsPath(fs, []string{"UP_DATA=" + dir, "UP_CONFIG=/etc/up.yaml"}); got != "/etc/up.yaml" {
		t.Errorf("UP_CONFIG: %q", got)
	}
	if err := fs.Parse([]string{"--config", "/x.yaml"}); err != nil {
		t.Fatal(err)
	}
	if got := nodeSettingsPath(fs, []string{"UP_CONFIG=/etc/up.yaml"}); got != "/x.yaml" {
		t.Errorf("--config: %q", got)
	}
}
