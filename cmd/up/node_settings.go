package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
)

// nodeSettingsPath is the settings file 'up node run' reads: --config
// (or UP_CONFIG); else node.yaml in the data directory (--data, or
// UP_DATA) when that file exists; else none ("").
func nodeSettingsPath(flags *pflag.FlagSet, environ []string) string {
	env := upEnv(environ)
	if f := flags.Lookup("config"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	if v := env[envName("config")]; v != "" {
		return v
	}
	data := env[envName("data")]
	if f := flags.Lookup("data"); f != nil && f.Changed {
		data = f.Value.String()
	}
	if data == "" {
		return ""
	}
	p := filepath.Join(data, settingsFile)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// loadNodeSettings fills the flags of 'up node run' that the command line
// left alone from the environment and the settings file.
func loadNodeSettings(flags *pflag.FlagSet, environ []string) error {
	if err := applySettings(flags, nodeSettingsPath(flags, environ), environ, "config"); err != nil {
		return usageError{err}
	}
	return nil
}

// writeNodeSettings writes dir/node.yaml for a node initialised in dir:
// every setting of 'up node run' with its help as a comment, data set to
// dir (absolute, so the file works from anywhere). An existing file is
// kept: the operator may have edited it.
func writeNodeSettings(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, settingsFile)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	b := writeSettings(newNodeRunCmd().Flags(), "Settings of 'up node run --config "+filepath.Join(abs, settingsFile)+"'",
		map[string][]string{"data": {abs}}, "config")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return "", fmt.Errorf("settings: %w", err)
	}
	return p, nil
}
