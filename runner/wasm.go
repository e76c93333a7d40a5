package runner

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/up-pool/up/sandbox"
)

// Module is a task's WebAssembly module (a WASI preview 1 command).
type Module struct {
	// Key names the module: its blob's manifest CID, as the job names it
	// (job.Spec.Module). The runner remembers, per key, the SHA-256 of the
	// bytes it read, so a module the sandbox holds loaded is not read
	// again: Path must hold the same bytes every time it comes with Key.
	Key []byte
	// Path is a file holding the module's bytes, checked against Key by
	// whoever fetched it (the client's Blobs).
	Path string
}

// ErrNoModule is returned (wrapped) by Run for a WebAssembly task whose
// module file cannot be read: the task's fault, or its fetcher's.
var ErrNoModule = errors.New("WebAssembly module unreadable")

// moduleIDsMax bounds the module digests a runner remembers by key; past
// it they are forgotten, and the next runs read their files again.
const moduleIDsMax = 1024

// wasmRunner is a runner's WebAssembly side: the sandbox, the projects
// allowed to use it, and the digests of the modules it read.
type wasmRunner struct {
	sandbox *sandbox.Sandbox // nil when no project is allowed
	allow   map[string]bool

	mu  sync.Mutex
	ids map[string][32]byte // by Module.Key
}

// newWASM checks cfg's WebAssembly settings and, if a project is allowed
// modules, makes the sandbox: its output bound is the runner's unless
// cfg.Sandbox sets one.
func newWASM(cfg Config, maxOutput int64) (*wasmRunner, error) {
	w := &wasmRunner{allow: map[string]bool{}, ids: map[string][32]byte{}}
	for _, p := range cfg.AllowWASM {
		if p == "" {
			return nil, errors.New("runner: AllowWASM has an empty project name")
		}
		w.allow[p] = true
	}
	if len(w.allow) == 0 {
		return w, nil
	}
	sc := cfg.Sandbox
	if sc.MaxOutput == 0 {
		sc.MaxOutput = maxOutput
	}
	s, err := sandbox.New(sc)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	w.sandbox = s
	return w, nil
}

// AllowedWASM reports whether the project may run WebAssembly modules
// here: any module it names in a job it signed (Config.AllowWASM).
func (r *Runner) AllowedWASM(project string) bool {
	return r.wasm.sandbox != nil && r.wasm.allow[project]
}

// Close releases the sandbox, if New made one (the compiled modules in
// Config.Sandbox.CacheDir stay). Call it once no Run is in progress.
func (r *Runner) Close() error {
	if r.wasm.sandbox == nil {
		return nil
	}
	return r.wasm.sandbox.Close()
}

// runWASM runs a WebAssembly task in the sandbox, in a fresh work
// directory holding its inputs, as Run runs a process.
func (r *Runner) runWASM(ctx context.Context, t Task) (Outcome, error) {
	if !r.AllowedWASM(t.Project) {
		return Outcome{}, fmt.Errorf("runner: project %q, WebAssembly module %q: %w: the volunteer does not allow the project's modules (AllowWASM)",
			t.Project, t.App, ErrNotAllowed)
	}
	if err := validate(t); err != nil {
		return Outcome{}, err
	}
	if len(t.WASM.Key) == 0 || t.WASM.Path == "" {
		return Outcome{}, fmt.Errorf("runner: WebAssembly task %q has no module key or path", t.App)
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	dir, err := r.workDir(t)
	if err != nil {
		return Outcome{}, err
	}
	if !r.keep {
		defer removeAll(dir)
	}
	stdin, err := readStdin(dir, t)
	if err != nil {
		return Outcome{}, err
	}
	st := sandbox.Task{Name: t.App, Args: t.Args, Stdin: stdin, WorkDir: dir, Memory: min(t.Memory, sandbox.MaxMemory), Wall: t.Wall}
	// The guest runs on one thread, so its CPU time is at most its wall
	// time: a CPU limit below the wall-clock one is enforced as the
	// wall-clock limit (stricter on a busy machine, never laxer).
	cpuBound := t.CPU > 0 && t.CPU < t.Wall
	if cpuBound {
		st.Wall = t.CPU
	}
	so, err := r.runModule(ctx, st, t.WASM)
	out := Outcome{ExitCode: so.ExitCode, Output: so.Output, Stderr: so.Stderr, Killed: so.Killed, CPU: so.Wall, Wall: so.Wall}
	if cpuBound && out.Killed == KilledWall {
		out.Killed = KilledCPU
	}
	if err == nil {
		r.collectOutputs(&out, dir, t)
	}
	if r.keep {
		out.WorkDir = dir
	}
	if err != nil {
		return out, fmt.Errorf("runner: %w", err)
	}
	return out, nil
}

// runModule runs st with m's module: by its digest alone if the sandbox
// holds it loaded under st's memory limit, else with its bytes read from
// m.Path (also when the sandbox dropped it in between).
func (r *Runner) runModule(ctx context.Context, st sandbox.Task, m *Module) (sandbox.Outcome, error) {
	w := r.wasm
	w.mu.Lock()
	id, known := w.ids[string(m.Key)]
	w.mu.Unlock()
	if known && w.sandbox.Loaded(id, st.Memory) {
		byID := st
		byID.ModuleID = id
		if out, err := w.sandbox.Run(ctx, byID); err == nil || ctx.Err() != nil {
			return out, err
		}
	}
	b, err := os.ReadFile(m.Path)
	if err != nil {
		return sandbox.Outcome{}, fmt.Errorf("%w: %w", ErrNoModule, err)
	}
	st.Module, st.ModuleID = b, sha256.Sum256(b)
	w.mu.Lock()
	if len(w.ids) >= moduleIDsMax {
		clear(w.ids)
	}
	w.ids[string(m.Key)] = st.ModuleID
	w.mu.Unlock()
	return w.sandbox.Run(ctx, st)
}

// workDir makes a task's work directory under the work root and copies
// its inputs in.
func (r *Runner) workDir(t Task) (string, error) {
	dir, err := os.MkdirTemp(r.workRoot, "task-")
	if err != nil {
		return "", fmt.Errorf("runner: work directory: %w", err)
	}
	for name, src := range t.Inputs {
		if err := copyInput(filepath.Join(dir, filepath.FromSlash(name)), src); err != nil {
			removeAll(dir)
			return "", fmt.Errorf("runner: input %q: %w", name, err)
		}
	}
	return dir, nil
}
