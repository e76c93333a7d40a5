package project

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/up-pool/up/job"
)

// JobFile is a submission description, in YAML or JSON (BOINC's
// create_work, with a parameter sweep): one job, or a template whose
// "{name}" placeholders in args, keywords, resources and input file names
// are filled from
// every combination of the sweep's parameters. Only app is required; the
// project's name is added to the keywords, copies defaults to 1,
// t_finish to 1h (DefaultTFinish) and lifetime to 14 days
// (DefaultLifetime). With adaptive: true (copies 1 or left out, no
// commit) each unit is sent as one copy and the harvest decides whether
// its result stands alone or the unit gets a second copy (AdaptivePolicy).
//
//	app: mandelbrot
//	args: ["{x}", "{y}", "64"]
//	keywords: [fractal]
//	resources: [mem:small]
//	t_finish: 10m
//	lifetime: 7d                   # nodes drop the job after; a Go duration or whole days
//	copies: 2
//	adaptive: true                 # copies 1: a 2nd copy only for an untrusted client or a spot check
//	commit: true                   # copies commit before they reveal (the default for copies ≥ 2)
//	reveal_wait: 10m               # the longest a copy waits for the others' commitments
//	steps: 20                      # a sequence: 20 steps in order on one client, t_finish each
//	module: mandelbrot.wasm        # a local WebAssembly module: a WASM job
//	inputs: [{file: data/a.bin}]   # a local file, uploaded as a blob
//	stdin: 0                       # input 0 is the standard input
//	outputs: [tile.png, log.txt]   # work-directory files the result carries
//	sweep:
//	  x: {from: 0, to: 7}          # 0, 1, ... 7
//	  y: [0.5, 1.5]                # explicit values
type JobFile struct {
	App        string              `yaml:"app"`
	Args       []string            `yaml:"args"`
	Keywords   []string            `yaml:"keywords"`
	Resources  []string            `yaml:"resources"`
	TFinish    string              `yaml:"t_finish"`
	Lifetime   string              `yaml:"lifetime"`
	Copies     int                 `yaml:"copies"`
	Adaptive   bool                `yaml:"adaptive"`
	Commit     *bool               `yaml:"commit"` // nil: on when copies ≥ 2
	RevealWait string              `yaml:"reveal_wait"`
	Steps      int                 `yaml:"steps"`
	Inputs     []JobFileInput      `yaml:"inputs"`
	Stdin      *int                `yaml:"stdin"`
	Outputs    []string            `yaml:"outputs"`
	Module     string              `yaml:"module"`
	Sweep      map[string]SweepDef `yaml:"sweep"`
}

// JobFileInput is an input reference in a job file: a URL with its
// sha256 and size, or a local file (relative to the job file's
// directory, or absolute), which the project uploads as a blob.
type JobFileInput struct {
	File   string `yaml:"file"`
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
	// InputFiles, when set, has one entry per input: the local file an
	// input is uploaded from ("" for a URL input). Until uploaded, such
	// an input has no Blob.
	InputFiles []string
	// ModuleFile is the local WebAssembly module the unit runs ("": a
	// native application); Module is its blob's key once uploaded.
	ModuleFile string
	Module     []byte
	// Stdin, when not 0, makes input Stdin − 1 the standard input;
	// Outputs are the work-directory files the result carries (job.Spec).
	Stdin    uint16
	Outputs  []string
	TFinish  time.Duration
	Lifetime time.Duration // how long after creation nodes keep the job
	// Commit, when not 0, is the commitments a copy waits for before it
	// reveals its result (job.Spec.Commit: the unit's quorum); RevealWait
	// the longest it waits (0: job.DefaultRevealWaitMS).
	Commit     uint16
	RevealWait time.Duration
	// Steps, when not 0, makes each job a sequence of that many steps
	// (job.Spec.Steps), TFinish the deadline of each.
	Steps uint16
	// Adaptive asks for adaptive replication: one copy, accepted alone
	// when its client is trusted and the unit is not drawn for a spot
	// check, else replicated and validated by a quorum of 2 (adaptive.go).
	Adaptive bool
	Params   map[string]string
}

// ParseJobFile parses and checks a job file and expands its sweep into
// units. projectName is added to every unit's keywords that lack it, so
// the project's clients, who query it, find every job; with an empty
// projectName (to check a file before the project is loaded) the
// keywords stay as written, possibly none. Every error is one line naming
// the field at fault and, where it helps, the line.
func ParseJobFile(b []byte, projectName string) ([]Unit, int, error) {
	f, copiesGiven, err := decodeJobFile(b)
	if err != nil {
		return nil, 0, err
	}
	if f.App == "" {
		return nil, 0, fmt.Errorf("no app: name the application to run")
	}
	if !copiesGiven {
		f.Copies = 1
	}
	if f.Copies < 1 || f.Copies > MaxCopies {
		return nil, 0, fmt.Errorf("copies %d out of 1..%d (leave copies out for one copy)", f.Copies, MaxCopies)
	}
	tf := DefaultTFinish
	if f.TFinish != "" {
		d, err := time.ParseDuration(f.TFinish)
		if err != nil || d <= 0 {
			return nil, 0, fmt.Errorf("t_finish %q is not a positive duration such as 30m", f.TFinish)
		}
		tf = d
	}
	life, err := parseLifetime(f.Lifetime, tf)
	if err != nil {
		return nil, 0, err
	}
	inputs, files, err := parseInputs(f.Inputs)
	if err != nil {
		return nil, 0, err
	}
	stdin, err := parseIO(f)
	if err != nil {
		return nil, 0, err
	}
	commit, wait, err := parseCommit(&f, tf)
	if err != nil {
		return nil, 0, err
	}
	if f.Adaptive && (f.Copies != 1 || f.Commit != nil && *f.Commit) {
		return nil, 0, fmt.Errorf("adaptive: true wants copies 1 (or copies left out) and no commit: the project adds the second copy when it is due (copies %d)", f.Copies)
	}
	if f.Steps < 0 || f.Steps > job.MaxSteps {
		return nil, 0, fmt.Errorf("steps %d out of 0..%d", f.Steps, job.MaxSteps)
	}
	names, values, total, err := expandSweep(f)
	if err != nil {
		return nil, 0, err
	}
	units := make([]Unit, 0, total)
	idx := make([]int, len(names))
	for range total {
		params := map[string]string{}
		for i, n := range names {
			params[n] = values[n][idx[i]]
		}
		u := Unit{App: f.App, TFinish: tf, Lifetime: life, Inputs: inputs, InputFiles: fillFiles(files, params), ModuleFile: f.Module, Params: params,
			Stdin: stdin, Outputs: f.Outputs, Commit: commit, RevealWait: wait, Steps: uint16(f.Steps), Adaptive: f.Adaptive,
			Args: fill(f.Args, params), Keywords: fill(f.Keywords, params), Resources: fill(f.Resources, params)}
		if projectName != "" && !slices.Contains(u.Keywords, projectName) {
			u.Keywords = append([]string{projectName}, u.Keywords...)
		}
		if err := checkUnit(u); err != nil {
			return nil, 0, err
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

// parseIO checks a job file's stdin (an input's index, from 0) and
// outputs (plain file names, job.ValidOutputName), and returns the spec's
// Stdin (the index + 1; 0: none).
func parseIO(f JobFile) (uint16, error) {
	if len(f.Outputs) > job.MaxOutputs {
		return 0, fmt.Errorf("outputs: %d files, max %d", len(f.Outputs), job.MaxOutputs)
	}
	seen := map[string]bool{}
	for i, o := range f.Outputs {
		if err := job.ValidOutputName(o); err != nil {
			return 0, fmt.Errorf("outputs[%d]: %q: want a plain file name of letters, digits, '.', '_' or '-' (at most %d bytes)", i, o, job.MaxOutputNameLen)
		}
		if seen[o] {
			return 0, fmt.Errorf("outputs[%d]: %q named twice", i, o)
		}
		seen[o] = true
	}
	if f.Stdin == nil {
		return 0, nil
	}
	if *f.Stdin < 0 || *f.Stdin >= len(f.Inputs) {
		return 0, fmt.Errorf("stdin: input %d of %d: want the index, from 0, of one of the inputs", *f.Stdin, len(f.Inputs))
	}
	return uint16(*f.Stdin + 1), nil
}

// parseInputs checks a job file's inputs: each a url with its sha256, or
// a local file. files is nil when no input is a file.
func parseInputs(ins []JobFileInput) ([]job.Input, []string, error) {
	var inputs []job.Input
	var files []string
	for i, in := range ins {
		if in.File != "" {
			if files == nil {
				files = make([]string, len(ins))
			}
			files[i] = in.File
			inputs = append(inputs, job.Input{})
			continue
		}
		sum, err := hex.DecodeString(in.SHA256)
		if err != nil || len(sum) != 32 || in.URL == "" {
			return nil, nil, fmt.Errorf("inputs[%d]: want a file, or a url and a 64-hex-digit sha256", i)
		}
		inputs = append(inputs, job.Input{URL: in.URL, SHA256: sum, Size: in.Size})
	}
	return inputs, files, nil
}

// DefaultTFinish is how long a claim lasts when a job file gives no
// t_finish.
const DefaultTFinish = time.Hour

// DefaultLifetime is how long after its creation a job lives when a job
// file gives no lifetime: the nodes drop it, and forget it was collected,
// after that. A unit not done by then needs a new submission.
const DefaultLifetime = 14 * 24 * time.Hour

// parseLifetime parses a job file's lifetime: a Go duration or whole days
// ("14d"), longer than t_finish (a claim must end before the job does)
// and at most job.MaxLifetimeMS; "" takes DefaultLifetime.
func parseLifetime(s string, tFinish time.Duration) (time.Duration, error) {
	if s == "" {
		return max(DefaultLifetime, 2*tFinish), nil
	}
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, aerr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, aerr
		if n > job.MaxLifetimeMS/(24*3600*1000)+1 {
			d = job.MaxLifetimeMS*time.Millisecond + 1
		}
	}
	maxLife := time.Duration(job.MaxLifetimeMS) * time.Millisecond
	switch {
	case err != nil || d <= 0:
		return 0, fmt.Errorf("lifetime %q is not a positive duration such as 336h or 14d", s)
	case d > maxLife:
		return 0, fmt.Errorf("lifetime %s is longer than %d days", s, job.MaxLifetimeMS/(24*3600*1000))
	case d <= tFinish:
		return 0, fmt.Errorf("lifetime %s must exceed t_finish %s: a claim would outlive its job", s, tFinish)
	}
	return d, nil
}

// expandSweep checks the sweep and returns its parameters' names (sorted),
// their values and the number of combinations. Every parameter must be
// used by an argument or an input file's name: one that is not would
// make identical units.
func expandSweep(f JobFile) ([]string, map[string][]string, int, error) {
	names := make([]string, 0, len(f.Sweep))
	values := map[string][]string{}
	total := 1
	for name, def := range f.Sweep {
		vs, err := def.expand()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("sweep %q: %w", name, err)
		}
		if len(vs) == 0 {
			return nil, nil, 0, fmt.Errorf("sweep %q has no values: the template expands to nothing", name)
		}
		uses := func(a string) bool { return strings.Contains(a, "{"+name+"}") }
		if !slices.ContainsFunc(f.Args, uses) && !slices.ContainsFunc(f.Inputs, func(in JobFileInput) bool { return uses(in.File) }) {
			return nil, nil, 0, fmt.Errorf("sweep %q: no argument or input file uses {%s}, so its units would be identical", name, name)
		}
		names = append(names, name)
		values[name] = vs
		if total > MaxUnits/len(vs) {
			return nil, nil, 0, fmt.Errorf("sweep: expands to more than %d units", MaxUnits)
		}
		total *= len(vs)
	}
	sort.Strings(names)
	return names, values, total, nil
}

// checkUnit checks an expanded unit's keywords, resources and arguments.
func checkUnit(u Unit) error {
	if len(u.Keywords) > job.MaxKeywords {
		return fmt.Errorf("keywords: %d with the project's, max %d", len(u.Keywords), job.MaxKeywords)
	}
	if len(u.Resources) > job.MaxResources {
		return fmt.Errorf("resources: %d, max %d", len(u.Resources), job.MaxResources)
	}
	for _, fk := range []struct {
		field string
		ks    []string
	}{{"keywords", u.Keywords}, {"resources", u.Resources}} {
		for _, k := range fk.ks {
			if err := job.ValidateKeyword(k); err != nil {
				return fmt.Errorf("%s: %q is not a keyword: want 1..%d bytes without spaces or parentheses", fk.field, k, job.MaxKeywordLen)
			}
		}
	}
	for _, a := range u.Args {
		if strings.Contains(a, "{") && strings.Contains(a, "}") {
			return fmt.Errorf("args: %q names a parameter the sweep does not define", a)
		}
	}
	for i, name := range u.InputFiles {
		if strings.Contains(name, "{") && strings.Contains(name, "}") {
			return fmt.Errorf("inputs[%d]: file %q names a parameter the sweep does not define", i, name)
		}
	}
	return nil
}

// fillFiles is fill for input file names, keeping nil (no file input)
// and "" (a URL input) as they are.
func fillFiles(files []string, params map[string]string) []string {
	if files == nil {
		return nil
	}
	return fill(files, params)
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

// parseCommit reads a job file's commit–reveal: commit asks each copy to
// commit before it reveals, waiting for the unit's quorum of commitments
// (Quorum(copies)) at most reveal_wait (default job.DefaultRevealWaitMS,
// at most T_finish). Left out, it is on for copies 2 or more: a copy that
// could see another's output before it reveals its own must not be able
// to agree with it for free; commit: false turns it off.
func parseCommit(f *JobFile, tFinish time.Duration) (uint16, time.Duration, error) {
	on := f.Copies >= 2
	if f.Commit != nil {
		on = *f.Commit
	}
	if !on {
		if f.RevealWait != "" {
			return 0, 0, fmt.Errorf("reveal_wait %q without commit–reveal (commit: false, or copies 1)", f.RevealWait)
		}
		return 0, 0, nil
	}
	if f.Copies < 2 {
		return 0, 0, fmt.Errorf("commit: true needs copies 2 or more (copies %d): a single copy has nothing to be copied from", f.Copies)
	}
	var wait time.Duration
	if f.RevealWait != "" {
		d, err := time.ParseDuration(f.RevealWait)
		if err != nil || d <= 0 || d > tFinish {
			return 0, 0, fmt.Errorf("reveal_wait %q is not a positive duration up to t_finish (%s)", f.RevealWait, tFinish)
		}
		wait = d
	}
	return uint16(Quorum(f.Copies)), wait, nil
}
