package project

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// jobFileField is a field of a job file: its name, what it wants (for
// error messages) and where it goes.
type jobFileField struct {
	name, want string
	into       func(f *JobFile) any
}

const (
	inputsWant = "a list of {file} or {url, sha256, size}"
	sweepWant  = "a mapping of parameter names to lists or {from, to, step}"
)

var jobFileFields = []jobFileField{
	{"app", "the application's name", func(f *JobFile) any { return &f.App }},
	{"args", "a list of strings", func(f *JobFile) any { return &f.Args }},
	{"keywords", "a list of keywords", func(f *JobFile) any { return &f.Keywords }},
	{"resources", "a list of resource classes", func(f *JobFile) any { return &f.Resources }},
	{"t_finish", "a duration such as 30m", func(f *JobFile) any { return &f.TFinish }},
	{"lifetime", "a duration such as 336h or 14d", func(f *JobFile) any { return &f.Lifetime }},
	{"copies", "a whole number", func(f *JobFile) any { return &f.Copies }},
	{"adaptive", "true or false", func(f *JobFile) any { return &f.Adaptive }},
	{"commit", "true or false", func(f *JobFile) any { return &f.Commit }},
	{"reveal_wait", "a duration such as 10m", func(f *JobFile) any { return &f.RevealWait }},
	{"steps", "a whole number of sequence steps", func(f *JobFile) any { return &f.Steps }},
	{"inputs", inputsWant, nil},
	{"stdin", "the index, from 0, of the input that is the standard input", func(f *JobFile) any { return &f.Stdin }},
	{"outputs", "a list of file names", func(f *JobFile) any { return &f.Outputs }},
	{"module", "the path of a .wasm file", func(f *JobFile) any { return &f.Module }},
	{"sweep", sweepWant, nil},
}

// decodeJobFile decodes a job file field by field, so that an error names
// the field and its line, not a Go type. It reports whether copies was
// given (copies: 0 is an error, not the default).
func decodeJobFile(b []byte) (JobFile, bool, error) {
	var f JobFile
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return f, false, fmt.Errorf("not YAML or JSON: %s", yamlMessage(err))
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return f, false, fmt.Errorf("the file is empty: want at least app:")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return f, false, fmt.Errorf("line %d: want a mapping of fields such as app:, args:, keywords:", root.Line)
	}
	known := make([]string, len(jobFileFields))
	for i, fd := range jobFileFields {
		known[i] = fd.name
	}
	if err := checkFields(root, known); err != nil {
		return f, false, err
	}
	copiesGiven := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		name, val := root.Content[i].Value, root.Content[i+1]
		var err error
		switch name {
		case "inputs":
			f.Inputs, err = decodeInputs(val)
		case "sweep":
			f.Sweep, err = decodeSweep(val)
		case "module":
			if val.Kind != yaml.ScalarNode || val.Decode(&f.Module) != nil || !strings.HasSuffix(f.Module, ".wasm") {
				err = fmt.Errorf("module: line %d: want the path of a WebAssembly file ending in .wasm", val.Line)
			}
		default:
			copiesGiven = copiesGiven || name == "copies"
			for _, fd := range jobFileFields {
				if fd.name == name && val.Decode(fd.into(&f)) != nil {
					err = fmt.Errorf("%s: line %d: want %s", name, val.Line, fd.want)
				}
			}
		}
		if err != nil {
			return f, false, err
		}
	}
	return f, copiesGiven, nil
}

// checkFields checks that a mapping's keys are known and given once.
func checkFields(m *yaml.Node, known []string) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		switch {
		case !slices.Contains(known, k.Value):
			return fmt.Errorf("line %d: unknown field %q (known: %s)", k.Line, k.Value, strings.Join(known, ", "))
		case seen[k.Value]:
			return fmt.Errorf("line %d: field %q given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
	}
	return nil
}

// decodeInputs decodes the inputs field: a list of {file} or {url,
// sha256, size}.
func decodeInputs(n *yaml.Node) ([]JobFileInput, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("inputs: line %d: want %s", n.Line, inputsWant)
	}
	out := make([]JobFileInput, len(n.Content))
	for i, item := range n.Content {
		if item.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("inputs[%d]: line %d: want {file} or {url, sha256, size}", i, item.Line)
		}
		if err := checkFields(item, []string{"file", "url", "sha256", "size"}); err != nil {
			return nil, fmt.Errorf("inputs[%d]: %w", i, err)
		}
		if item.Decode(&out[i]) != nil {
			return nil, fmt.Errorf("inputs[%d]: line %d: want file, url and sha256 strings and size a whole number", i, item.Line)
		}
		if in := out[i]; in.File != "" && (in.URL != "" || in.SHA256 != "" || in.Size != 0) {
			return nil, fmt.Errorf("inputs[%d]: line %d: give a file or a url with its sha256 and size, not both", i, item.Line)
		}
	}
	return out, nil
}

// decodeSweep decodes the sweep field: each parameter a list of values or
// a range {from, to, step}.
func decodeSweep(n *yaml.Node) (map[string]SweepDef, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("sweep: line %d: want %s", n.Line, sweepWant)
	}
	out := map[string]SweepDef{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("sweep: line %d: parameter %q given twice", k.Line, k.Value)
		}
		var def SweepDef
		switch v.Kind {
		case yaml.SequenceNode:
			if v.Decode(&def.Values) != nil {
				return nil, fmt.Errorf("sweep %q: line %d: want a list of values", k.Value, v.Line)
			}
			if def.Values == nil {
				def.Values = []string{}
			}
		case yaml.MappingNode:
			if err := checkFields(v, []string{"from", "to", "step"}); err != nil {
				return nil, fmt.Errorf("sweep %q: %w", k.Value, err)
			}
			type plain SweepDef
			if v.Decode((*plain)(&def)) != nil {
				return nil, fmt.Errorf("sweep %q: line %d: want numbers from, to and step", k.Value, v.Line)
			}
		default:
			return nil, fmt.Errorf("sweep %q: line %d: want a list of values or {from, to, step}", k.Value, v.Line)
		}
		out[k.Value] = def
	}
	return out, nil
}

// yamlMessage is a YAML syntax error on one line, without the "yaml: "
// prefix.
func yamlMessage(err error) string {
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", "; ")
}
