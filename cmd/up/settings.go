package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// A daemon's settings come from, highest first: its command-line flags,
// UP_… environment variables (UP_ and the flag's name in capitals, '-'
// as '_': UP_LOG_LEVEL for --log-level), its YAML settings file (keys
// are the flags' names), and the flags' defaults. applySettings sets each
// flag the command line left alone from the environment or the file.

// settingsFile is the name of the settings file 'up node init' writes in a
// node's data directory, which 'up node run --data DIR' reads when there
// is no --config.
const settingsFile = "node.yaml"

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "UP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// upEnv is the UP_… variables of environ (KEY=VALUE pairs, as
// os.Environ), by name.
func upEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "UP_") {
			env[k] = v
		}
	}
	return env
}

// applySettings sets every flag of fs not given on the command line from
// environ (KEY=VALUE pairs, as os.Environ) or else from the YAML settings
// in file (none when file is ""). skip names flags that neither may set
// (the one naming the file itself). A key the file names that is no flag,
// or a value a flag refuses, is an error naming the file, line and key.
func applySettings(fs *pflag.FlagSet, file string, environ []string, skip ...string) error {
	env := upEnv(environ)
	fromFile, err := readSettings(fs, file, skip)
	if err != nil {
		return err
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || slices.Contains(skip, f.Name) {
			return
		}
		if v, ok := env[envName(f.Name)]; ok {
			if err := setFlag(f, []string{v}, true); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
			return
		}
		if s, ok := fromFile[f.Name]; ok {
			if err := setFlag(f, s.values, false); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %w", file, s.line, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// setting is one key of a settings file: its values (one, or a list's)
// and the line it is on.
type setting struct {
	values []string
	line   int
}

// readSettings reads a YAML mapping of flag names to values (a scalar,
// or a list for a repeatable flag).
func readSettings(fs *pflag.FlagSet, file string, skip []string) (map[string]setting, error) {
	out := map[string]setting{}
	if file == "" {
		return out, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("settings %s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return out, nil // empty or all comments
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("settings %s:%d: want a mapping of setting: value", file, m.Line)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if fs.Lookup(k.Value) == nil || slices.Contains(skip, k.Value) {
			return nil, fmt.Errorf("settings %s:%d: unknown setting %q", file, k.Line, k.Value)
		}
		s := setting{line: k.Line}
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag != "!!null" {
				s.values = []string{v.Value}
			}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("settings %s:%d: %s: want a list of values", file, e.Line, k.Value)
				}
				s.values = append(s.values, e.Value)
			}
		default:
			return nil, fmt.Errorf("settings %s:%d: %s: want a value or a list", file, v.Line, k.Value)
		}
		out[k.Value] = s
	}
	return out, nil
}

// setFlag sets f to values. A repeatable flag takes a list (or, from the
// environment, a comma-separated string); an empty list leaves it empty.
func setFlag(f *pflag.Flag, values []string, fromEnv bool) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		if fromEnv && len(values) == 1 {
			values = splitList(values[0])
		}
		return sv.Replace(values)
	}
	if len(values) != 1 {
		return fmt.Errorf("want one value, not %d", len(values))
	}
	if err := f.Value.Set(values[0]); err != nil {
		return err
	}
	f.Changed = true
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// writeSettings renders fs's flags as a commented YAML settings file:
// each flag's help as a comment above it, its value from values (by
// name) or else its default; flags in skip are left out. Hidden and
// deprecated flags are left out too.
func writeSettings(fs *pflag.FlagSet, title string, values map[string][]string, skip ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n#\n# Every setting is a flag of the command, with the same name; a flag on\n"+
		"# the command line wins, then an UP_… environment variable (UP_LOG_LEVEL\n"+
		"# for log-level), then this file, then the default.\n", title)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" && !slices.Contains(skip, f.Name) {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	for _, name := range names {
		f := fs.Lookup(name)
		fmt.Fprintf(&b, "\n# %s\n", strings.ReplaceAll(f.Usage, "\n", "\n# "))
		vals, set := values[name]
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			if !set {
				vals = sv.GetSlice()
			}
			if len(vals) == 0 {
				fmt.Fprintf(&b, "%s: []\n", name)
				continue
			}
			fmt.Fprintf(&b, "%s:\n", name)
			for _, v := range vals {
				fmt.Fprintf(&b, "  - %s\n", yamlScalar(v))
			}
			continue
		}
		v := f.DefValue
		if set && len(vals) > 0 {
			v = vals[0]
		}
		fmt.Fprintf(&b, "%s: %s\n", name, yamlScalar(v))
	}
	return b.Bytes()
}

// plainScalar matches values written bare: YAML reads them back as the
// same text (settings are read as text, whatever YAML's type for them).
var plainScalar = regexp.MustCompile(`^[A-Za-z0-9_./@+-][A-Za-z0-9_./:@+=,-]*$`)

// yamlScalar is s as a YAML scalar, quoted where YAML needs it.
func yamlScalar(s string) string {
	if plainScalar.MatchString(s) {
		return s
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(b), "\n")
}
