package project

import (
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/up-pool/up/job"
)

// JobFile is a submission description, in YAML or JSON (BOINC's
// create_work, with a parameter sweep): one job, or a template whose
// "{name}" placeholders in args and keywords are filled from every
// combination of the sweep's parameters.
//
//	app: mandelbrot
//	args: ["{x}", "{y}", "64"]
//	keywords: [fractal]
//	resources: [mem:small]
//	t_finish: 10m
//	copies: 2
//	sweep:
//	  x: {from: 0, to: 7}          # 0, 1, ... 7
//	  y: [0.5, 1.5]                # explicit values
type JobFile struct {
	App       string              `yaml:"app"`
	Args      []string            `yaml:"args"`
	Keywords  []string            `yaml:"keywords"`
	Resources []string            `yaml:"resources"`
	TFinish   string              `yaml:"t_finish"`
	Copies    int                 `yaml:"copies"`
	Inputs    []JobFileInput      `yaml:"inputs"`
	Sweep     map[string]SweepDef `yaml:"sweep"`
}

// JobFileInput is an input reference in a job file.
type JobFileInput struct {
	URL    string `yaml:"url"`
	SHA256 string `yaml:"sha256"`
	Size   int64  `yaml:"size"`
}

// SweepDef is one sweep parameter: a list of values, or a range
// {from, to, step} (step defaults to 1; to is included).
type SweepDef struct {
	Values []string
	From   *float64 `yaml:"from"`
	To     *float64 `yaml:"to"`
	Step   float64  `yaml:"step"`
}

// UnmarshalYAML accepts a list or a mapping.
func (s *SweepDef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		return n.Decode(&s.Values)
	}
	type plain SweepDef
	return n.Decode((*plain)(s))
}

// Job file bounds.
const (
	MaxUnits       = 1_000_000
	MaxCopies      = 16
	maxSweepValues = 1_000_000
)

// Unit is one expanded work unit: what each of its copies runs.
type Unit struct {
	App       string
	Args      []string
	Keywords  []string
	Resources []string
	Inputs    []job.Input
	TFinish   time.Duration
	Params    map[string]string
}

// ParseJobFile parses and checks a job file and expands its sweep into
// units. Every error names the field at fault.
func ParseJobFile(b []byte) ([]Unit, int, error) {
	var f JobFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, 0, fmt.Errorf("job file: %w", err)
	}
	if f.App == "" {
		return nil, 0, fmt.Errorf("job file: no app")
	}
	if len(f.Keywords) == 0 {
		return nil, 0, fmt.Errorf("job file: no keywords (clients find jobs by them)")
	}
	if f.Copies == 0 {
		f.Copies = 1
	}
	if f.Copies < 1 || f.Copies > MaxCopies {
		return nil, 0, fmt.Errorf("job file: copies %d out of 1..%d", f.Copies, MaxCopies)
	}
	tf := time.Hour
	if f.TFinish != "" {
		d, err := time.ParseDuration(f.TFinish)
		if err != nil || d <= 0 {
			return nil, 0, fmt.Errorf("job file: t_finish %q is not a positive duration such as 30m", f.TFinish)
		}
		tf = d
	}
	var inputs []job.Input
	for i, in := range f.Inputs {
		sum, err := hex.DecodeString(in.SHA256)
		if err != nil || len(sum) != 32 || in.URL == "" {
			return nil, 0, fmt.Errorf("job file: input %d: want a url and a 64-hex-digit sha256", i)
		}
		inputs = append(inputs, job.Input{URL: in.URL, SHA256: sum, Size: in.Size})
	}
	names := make([]string, 0, len(f.Sweep))
	values := map[string][]string{}
	total := 1
	for name, def := range f.Sweep {
		vs, err := def.expand()
		if err != nil {
			return nil, 0, fmt.Errorf("job file: sweep %q: %w", name, err)
		}
		if len(vs) == 0 {
			return nil, 0, fmt.Errorf("job file: sweep %q has no values: the template expands to nothing", name)
		}
		names = append(names, name)
		values[name] = vs
		if total > MaxUnits/len(vs) {
			return nil, 0, fmt.Errorf("job file: the sweep expands to more than %d units", MaxUnits)
		}
		total *= len(vs)
	}
	sort.Strings(names)
	units := make([]Unit, 0, total)
	idx := make([]int, len(names))
	for range total {
		params := map[string]string{}
		for i, n := range names {
			params[n] = values[n][idx[i]]
		}
		u := Unit{App: f.App, TFinish: tf, Inputs: inputs, Params: params,
			Args: fill(f.Args, params), Keywords: fill(f.Keywords, params), Resources: fill(f.Resources, params)}
		for _, k := range append(append([]string(nil), u.Keywords...), u.Resources...) {
			if err := job.ValidateKeyword(k); err != nil {
				return nil, 0, fmt.Errorf("job file: %w", err)
			}
		}
		for _, a := range u.Args {
			if strings.Contains(a, "{") && strings.Contains(a, "}") {
				return nil, 0, fmt.Errorf("job file: argument %q names a parameter the sweep does not define", a)
			}
		}
		units = append(units, u)
		for i := len(idx) - 1; i >= 0; i-- { // next combination
			idx[i]++
			if idx[i] < len(values[names[i]]) {
				break
			}
			idx[i] = 0
		}
	}
	return units, f.Copies, nil
}

func (s SweepDef) expand() ([]string, error) {
	if s.Values != nil {
		if len(s.Values) > maxSweepValues {
			return nil, fmt.Errorf("%d values (max %d)", len(s.Values), maxSweepValues)
		}
		return s.Values, nil
	}
	if s.From == nil || s.To == nil {
		return nil, fmt.Errorf("want a list of values or from and to")
	}
	step := s.Step
	if step == 0 {
		step = 1
	}
	if step < 0 || math.IsNaN(step) || math.IsInf(*s.From, 0) || math.IsInf(*s.To, 0) {
		return nil, fmt.Errorf("step must be positive and bounds finite")
	}
	n := math.Floor((*s.To-*s.From)/step+1e-9) + 1
	if n > maxSweepValues {
		return nil, fmt.Errorf("%.0f values (max %d)", n, maxSweepValues)
	}
	var out []string
	for i := 0; i < int(n); i++ {
		out = append(out, strconv.FormatFloat(*s.From+float64(i)*step, 'g', -1, 64))
	}
	return out, nil
}

// fill replaces {name} placeholders with the parameters' values.
func fill(ts []string, params map[string]string) []string {
	if len(ts) == 0 {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		for k, v := range params {
			t = strings.ReplaceAll(t, "{"+k+"}", v)
		}
		out[i] = t
	}
	return out
}
