// Package runner runs job applications as subprocesses in their own work
// directories with wall-clock, CPU-time and memory limits, enforcing the
// volunteer's allow-list of applications per project; and WebAssembly
// modules, in-process in the sandbox (package sandbox), for the projects
// the volunteer allows modules (Config.AllowWASM).
//
// Every application, built-in or external, runs through the launcher (`up app
// exec`, see Exec) in a fresh work directory and in its own process group:
// the launcher sets RLIMIT_CPU and RLIMIT_AS on itself and then runs the
// built-in in-process or execs the external executable, so the limits apply
// to the application; the runner enforces the wall-clock limit and the output
// bound by killing the whole group.
//
// A WebAssembly task (Task.WASM) runs in the same kind of work directory,
// but in this process: the sandbox mounts the directory as the guest's
// only file system, gives it no network and no environment, and holds it
// to the memory limit (its linear memory), the wall-clock limit and the
// output bound; its stdout is the result, as a process's.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/sandbox"
)

// Config configures a Runner.
type Config struct {
	// Launcher is the command prefix that runs an application under limits:
	// the up binary's own `app exec` subcommand, e.g.
	// []string{"/usr/local/bin/up", "app", "exec"}. Required.
	Launcher []string
	// WorkRoot is the directory under which each task gets a fresh work
	// directory (removed after unless KeepWorkDirs). Required; New creates it.
	WorkRoot     string
	KeepWorkDirs bool
	// Allow maps project name → allowed application names; "*" as an app
	// name allows every built-in. External (non built-in) apps map name →
	// absolute executable path via External, and must be allowed by name.
	Allow    map[string][]string
	External map[string]string
	// MaxOutput bounds the stdout captured as the result (default 16 MiB);
	// beyond it the task fails.
	MaxOutput int64
	// Env is extra environment ("KEY=value") for the application. The child
	// does not inherit the worker's environment: it gets PATH, HOME and
	// TMPDIR (both the work directory), then Env.
	Env []string
	// AllowWASM lists the projects allowed to run WebAssembly modules
	// here: any module the project names in a job it signed (Task.WASM),
	// run in the sandbox. It is per project, not per application as Allow
	// is, because a module reaches only what the sandbox gives it (its
	// work directory, its limits, no network), where a native application
	// runs with the volunteer's rights. Empty: no module runs.
	AllowWASM []string
	// Sandbox configures the sandbox New makes when AllowWASM is not
	// empty: CacheDir (compiled modules kept across runs; the client's is
	// <data>/wasm-cache), the default memory limit, the output bound
	// (default MaxOutput), the modules kept loaded.
	Sandbox sandbox.Config
}

// Task is one run of an application.
type Task struct {
	Project, App string
	Args         []string
	// Inputs maps a file name in the work dir (a local, slash-separated
	// path) → the path of an already fetched, checked file, which is
	// copied in (not linked, so the application cannot alter the original).
	Inputs map[string]string
	Wall   time.Duration // wall-clock limit (required > 0)
	CPU    time.Duration // CPU-time limit (0 = none); enforced in whole seconds, rounded up
	// Memory is the limit in bytes (0 = none): of address space for a
	// process; of linear memory for a module, at most sandbox.MaxMemory
	// (4 GiB, more is taken as that; 0 takes the sandbox's default).
	Memory int64
	// WASM, when set, makes the task a WebAssembly module's, run in the
	// sandbox if the project is in Config.AllowWASM; App is then only the
	// module's display name (and its argv[0]). A module runs on one
	// thread, so a CPU limit below Wall is enforced as its wall-clock
	// limit (Killed says KilledCPU), and its CPU time is reported as its
	// wall time.
	WASM *Module
	// Stdin names one of Inputs whose bytes are the application's
	// standard input (a module's at most MaxStdin); "": none.
	Stdin string
	// Outputs names files the application writes in its work directory
	// (plain names) whose bytes Outcome.Files returns, in this order.
	Outputs []string
}

// Reasons for Outcome.Killed.
const (
	KilledWall   = "wall-clock limit"
	KilledCPU    = "cpu limit"
	KilledMemory = "memory limit"
	KilledOutput = "output limit"
)

// Outcome is the result of a task that ran.
type Outcome struct {
	// ExitCode is the exit status, or 128+signal number if a signal ended
	// the process.
	ExitCode int
	Output   []byte        // stdout (its first MaxOutput bytes if Killed is KilledOutput)
	Stderr   string        // last 4 KiB of stderr
	Killed   string        // "", or one of the Killed* reasons
	CPU      time.Duration // user+sys of the child (from ProcessState)
	Wall     time.Duration
	// WorkDir is the task's work directory if Config.KeepWorkDirs, else "".
	WorkDir string
	// Files are Task.Outputs' bytes, in order: nil for a file not written
	// (or not a regular file); together with Output within MaxOutput.
	Files [][]byte
}

// ErrNotAllowed is returned (wrapped) by Run for an application the
// allow-list does not permit for the project.
var ErrNotAllowed = errors.New("application not allowed")

// Exit codes of Exec itself (as env(1) and timeout(1) use them).
const (
	ExitLauncher   = 125 // bad flags or limits: the launcher failed
	ExitCannotExec = 126 // the external executable could not be executed
	ExitNotFound   = 127 // no such built-in or executable
)

// DefaultMaxOutput is the default of Config.MaxOutput.
const DefaultMaxOutput = 16 << 20

// stderrTail is how much of stderr an Outcome keeps.
const stderrTail = 4 << 10

// Runner runs tasks; it is safe for concurrent use.
type Runner struct {
	launcher  []string // launcher[0] resolved to an absolute path
	workRoot  string
	keep      bool
	allow     map[string]map[string]bool
	external  map[string]string
	maxOutput int64
	env       []string
	wasm      *wasmRunner
}

// New validates cfg and returns a Runner. It creates cfg.WorkRoot.
func New(cfg Config) (*Runner, error) {
	if len(cfg.Launcher) == 0 || cfg.Launcher[0] == "" {
		return nil, errors.New("runner: Launcher is required")
	}
	launcher := slices.Clone(cfg.Launcher)
	path, err := exec.LookPath(launcher[0])
	if err != nil {
		return nil, fmt.Errorf("runner: launcher: %w", err)
	}
	if launcher[0], err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("runner: launcher: %w", err)
	}
	if cfg.WorkRoot == "" {
		return nil, errors.New("runner: WorkRoot is required")
	}
	root, err := filepath.Abs(cfg.WorkRoot)
	if err != nil {
		return nil, fmt.Errorf("runner: WorkRoot: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("runner: WorkRoot: %w", err)
	}
	if cfg.MaxOutput < 0 {
		return nil, fmt.Errorf("runner: MaxOutput %d is negative", cfg.MaxOutput)
	}
	r := &Runner{
		launcher:  launcher,
		workRoot:  root,
		keep:      cfg.KeepWorkDirs,
		allow:     make(map[string]map[string]bool),
		external:  make(map[string]string),
		maxOutput: cfg.MaxOutput,
		env:       slices.Clone(cfg.Env),
	}
	if r.maxOutput == 0 {
		r.maxOutput = DefaultMaxOutput
	}
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("runner: Env entry %q is not KEY=value", kv)
		}
	}
	for name, path := range cfg.External {
		if err := checkExternal(name, path); err != nil {
			return nil, err
		}
		r.external[name] = filepath.Clean(path)
	}
	for project, names := range cfg.Allow {
		if project == "" {
			return nil, errors.New("runner: Allow has an empty project name")
		}
		set := make(map[string]bool, len(names))
		for _, n := range names {
			if n == "" {
				return nil, fmt.Errorf("runner: Allow[%q] has an empty application name", project)
			}
			set[n] = true
		}
		r.allow[project] = set
	}
	if r.wasm, err = newWASM(cfg, r.maxOutput); err != nil {
		return nil, err
	}
	return r, nil
}

// checkExternal checks an external application's name and executable.
func checkExternal(name, path string) error {
	switch {
	case name == "" || name == "*" || strings.HasPrefix(name, "-") || filepath.IsAbs(name):
		return fmt.Errorf("runner: external application name %q is invalid", name)
	case isBuiltin(name):
		return fmt.Errorf("runner: external application %q shadows a built-in", name)
	case !filepath.IsAbs(path):
		return fmt.Errorf("runner: external application %q: path %q is not absolute", name, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("runner: external application %q: %w", name, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("runner: external application %q: %s is not an executable file", name, path)
	}
	return nil
}

func isBuiltin(name string) bool {
	_, ok := apps.Lookup(name)
	return ok
}

// Allowed reports whether the allow-list permits app for project: the app is
// listed for the project, or is a built-in and the project lists "*". An
// application that is neither built-in nor in Config.External is never
// allowed.
func (r *Runner) Allowed(project, app string) bool {
	set := r.allow[project]
	switch {
	case isBuiltin(app):
		return set[app] || set["*"]
	case r.external[app] != "":
		return set[app]
	}
	return false
}

// Run runs t and waits for it to end. It returns an error wrapping
// ErrNotAllowed (naming project and app) before creating anything or starting
// any process if the allow-list does not permit the application (for a
// WebAssembly task: if the project is not in AllowWASM), and other errors
// for invalid tasks and setup failures. A job that fails or is killed for a
// limit is not an error: it is an Outcome with ExitCode != 0 and/or Killed
// set. If ctx ends first, the process group (or the guest) is killed and
// Run returns the Outcome with an error wrapping ctx.Err().
func (r *Runner) Run(ctx context.Context, t Task) (Outcome, error) {
	if t.WASM != nil {
		return r.runWASM(ctx, t)
	}
	if !r.Allowed(t.Project, t.App) {
		return Outcome{}, fmt.Errorf("runner: project %q, application %q: %w", t.Project, t.App, ErrNotAllowed)
	}
	if err := validate(t); err != nil {
		return Outcome{}, err
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	target := t.App
	if !isBuiltin(target) {
		target = r.external[t.App]
	}
	dir, err := r.workDir(t)
	if err != nil {
		return Outcome{}, err
	}
	if !r.keep {
		defer removeAll(dir)
	}
	args := slices.Clone(r.launcher[1:])
	args = append(args,
		"--cpu", fmt.Sprint(cpuSeconds(t.CPU)),
		"--mem", fmt.Sprint(t.Memory),
		"--wall", t.Wall.String(),
		"--", target)
	args = append(args, t.Args...)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}, r.env...)
	out, err := r.start(ctx, r.launcher[0], args, dir, env, t)
	if err == nil {
		r.collectOutputs(&out, dir, t)
	}
	if r.keep {
		out.WorkDir = dir
	}
	return out, err
}

// validate checks a task's limits and input names.
func validate(t Task) error {
	if t.Wall <= 0 {
		return fmt.Errorf("runner: task wall-clock limit %v is not positive", t.Wall)
	}
	if t.CPU < 0 || t.Memory < 0 {
		return fmt.Errorf("runner: task CPU (%v) and memory (%d) limits must not be negative", t.CPU, t.Memory)
	}
	for name := range t.Inputs {
		if !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(name, `\`) {
			return fmt.Errorf("runner: input name %q is not a local path", name)
		}
	}
	return validateIO(t)
}

// cpuSeconds rounds a CPU-time limit up to the whole seconds RLIMIT_CPU takes.
func cpuSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// copyInput copies the file src to dst, creating dst's parent directories.
func copyInput(dst, src string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi.Mode().Perm()&0o100 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = out.ReadFrom(in)
	return err
}

// removeAll removes a work directory, first making every directory in it
// writable if the application left some read-only.
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
