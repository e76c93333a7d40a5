// Package sandbox runs WebAssembly applications in-process: WASI preview 1
// command modules under wazero (pure Go, so the up binary stays static),
// each run confined to one work directory and held to a memory limit, a
// wall-clock limit and an output bound.
//
// The package owns the guest's whole view of the world. A guest sees its
// arguments, its standard input, its work directory mounted at "/" (also
// its current directory, so "x", "./x" and "/x" name the same file; ".."
// and symbolic links cannot lead out of it), a clock and a random source
// that are the same on every run, and nothing else: no environment
// variables, no other file, no network (WASI preview 1 has no call that
// opens a socket, and wazero lends the guest no listener). What a guest
// prints, how it exits and why the sandbox stopped it come back as an
// Outcome; only a malformed task or a broken host is a Run error.
//
// The wall-clock limit stops guest code at its next loop iteration or call
// (wazero's WithCloseOnContextDone); it cannot interrupt a call blocked in
// the host, so none of the calls the guest gets can block: stdin is a
// byte slice, the work dir holds only regular files and directories, the
// clocks are virtual, and no socket can reach the guest (not even through
// the caller's context, whose values Run does not pass on).
//
// Determinism is the point: the same module with the same arguments, input
// and files produces the same bytes on every volunteer's machine, whatever
// its operating system or architecture (WebAssembly leaves only the bits
// of a NaN to the machine), which is what validating results by quorum
// needs.
//
// The package does not fetch modules (the client does, through its
// client.Blobs), choose limits or decide which projects' modules a
// volunteer allows: the runner does (runner.Config.AllowWASM, Task.WASM).
package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// Config configures a Sandbox. Zero values take the defaults.
type Config struct {
	// CacheDir is a directory where compiled modules are kept across
	// processes (created if missing; wazero keys its entries by its
	// version, GOOS and GOARCH). "" keeps them in memory only, for the
	// Sandbox's lifetime.
	CacheDir string
	// Memory is the linear-memory limit of a task that sets none, in
	// bytes, rounded up to 64 KiB pages; at most 4 GiB (MaxMemory).
	// Default DefaultMemory (256 MiB).
	Memory int64
	// MaxOutput bounds a task's stdout, in bytes; a task that writes more
	// is stopped and fails with KilledOutput. Default DefaultMaxOutput
	// (16 MiB).
	MaxOutput int64
	// MaxLoaded bounds how many compiled modules stay loaded, ready to
	// instantiate, per distinct (module, memory limit); the least recently
	// used one not running is dropped beyond it (it recompiles from the
	// compilation cache, which is cheaper than compiling afresh). Default
	// DefaultMaxLoaded (16).
	MaxLoaded int
}

// Defaults of Config.
const (
	DefaultMemory    = 256 << 20
	DefaultMaxOutput = 16 << 20
	DefaultMaxLoaded = 16
)

// PageSize is the size of a WebAssembly memory page, in bytes: memory
// limits are rounded up to whole pages.
const PageSize = 64 << 10

// MaxMemory is the largest memory limit, in bytes: all a 32-bit
// WebAssembly memory can address (65536 pages).
const MaxMemory = 4 << 30

// Task is one run of a module.
type Task struct {
	// Module is the WebAssembly binary (a WASI preview 1 command: it
	// exports _start). It may be nil when ModuleID names a module this
	// Sandbox has loaded (see Loaded).
	Module []byte
	// ModuleID is the SHA-256 of Module, the key under which its compiled
	// code is kept, so a module compiles once however often it runs. Zero:
	// Run computes it. Run refuses a Module whose SHA-256 differs.
	ModuleID [32]byte
	// Name is the guest's argv[0]; "" gives "main".
	Name string
	// Args are the guest's arguments after argv[0].
	Args []string
	// Stdin is the guest's whole standard input.
	Stdin []byte
	// WorkDir is an existing directory, the only one the guest can reach:
	// it is mounted at "/" and is the guest's current directory. It must
	// hold no symbolic link. The guest may create and change files in it.
	WorkDir string
	// Memory is the linear-memory limit, in bytes, rounded up to 64 KiB
	// pages; 0 takes Config.Memory.
	Memory int64
	// Wall is the wall-clock limit, from the guest's instantiation;
	// required > 0. Compiling the module does not count against it, so a
	// task's fate does not depend on whether this volunteer had the module
	// compiled already.
	Wall time.Duration
}

// Reasons for Outcome.Killed, the same words runner.Outcome uses.
const (
	KilledWall   = "wall-clock limit"
	KilledMemory = "memory limit"
	KilledOutput = "output limit"
)

// Exit codes the sandbox reports for a guest that did not exit by itself,
// chosen as a process runner would report the like (see runner.Exec).
const (
	// ExitCannotRun: the module could not start: it does not compile,
	// imports what the sandbox does not provide (a socket call, say),
	// exports no _start, or needs more memory than the limit.
	ExitCannotRun = 126
	// ExitTrap: the guest trapped (unreachable, out-of-bounds access,
	// stack exhaustion...), as a process that aborted (128+SIGABRT).
	ExitTrap = 134
	// ExitKilled: the sandbox stopped the guest at the wall-clock limit or
	// the output bound, as a process killed with SIGKILL (128+9).
	ExitKilled = 137
)

// Outcome is the result of a task that ran.
type Outcome struct {
	// ExitCode is the guest's exit status, or one of the Exit* codes.
	ExitCode int
	// Output is stdout, its first MaxOutput bytes if Killed is KilledOutput.
	Output []byte
	// Stderr is the last 4 KiB of stderr; where the sandbox ended or
	// refused the guest it ends with a line "sandbox: ..." saying why.
	Stderr string
	// Killed is "" or one of the Killed* reasons.
	Killed string
	// Memory is the guest's linear memory at the end, in bytes (memory
	// never shrinks, so it is also the peak); 0 if it never started.
	Memory int64
	// Load is the time spent compiling the module or finding it compiled.
	Load time.Duration
	// Wall is the guest's wall-clock time, from its instantiation.
	Wall time.Duration
}

// stderrTail is how much of stderr an Outcome keeps, in bytes.
const stderrTail = 4 << 10

// randSeed seeds every guest's random source (WASI random_get, behind Go's
// crypto/rand and math/rand alike). It is fixed so that the same module
// with the same inputs gives the same bytes on every machine, which quorum
// validation needs; a guest that wants varied randomness takes a seed as
// an argument.
var randSeed = [32]byte([]byte("up-pool sandbox: fixed seed v1.."))

// Sandbox runs tasks; it is safe for concurrent use.
type Sandbox struct {
	memory    int64
	maxOutput int64
	mods      *modules
}

// New validates cfg and returns a Sandbox; Close releases it.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Memory < 0 || cfg.Memory > MaxMemory {
		return nil, fmt.Errorf("sandbox: Memory %d is outside [0, %d] bytes", cfg.Memory, int64(MaxMemory))
	}
	if cfg.MaxOutput < 0 || cfg.MaxLoaded < 0 {
		return nil, fmt.Errorf("sandbox: MaxOutput (%d) and MaxLoaded (%d) must not be negative", cfg.MaxOutput, cfg.MaxLoaded)
	}
	s := &Sandbox{memory: cfg.Memory, maxOutput: cfg.MaxOutput}
	if s.memory == 0 {
		s.memory = DefaultMemory
	}
	if s.maxOutput == 0 {
		s.maxOutput = DefaultMaxOutput
	}
	maxLoaded := cfg.MaxLoaded
	if maxLoaded == 0 {
		maxLoaded = DefaultMaxLoaded
	}
	cache := wazero.NewCompilationCache()
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
	}
	s.mods = newModules(cache, maxLoaded)
	return s, nil
}

// Close drops every loaded module and closes the compilation cache (the
// files in CacheDir stay). Call it once no Run is in progress.
func (s *Sandbox) Close() error {
	if err := s.mods.close(); err != nil {
		return fmt.Errorf("sandbox: close: %w", err)
	}
	return nil
}

// Loaded reports whether the module with that SHA-256 is loaded under the
// memory limit (0: Config.Memory), so a Task may omit its bytes.
func (s *Sandbox) Loaded(id [32]byte, memory int64) bool {
	if memory == 0 {
		memory = s.memory
	}
	return s.mods.loaded(moduleKey{pages: pages(memory), id: id})
}

// Run runs t and waits for it to end. A guest that fails, is refused or
// is stopped at a limit is not an error: it is an Outcome with ExitCode
// != 0 and/or Killed set. Run returns an error for an invalid task (no
// WorkDir, a Module that does not match ModuleID, ...), and, with the
// Outcome so far, one wrapping ctx.Err() if ctx ends first.
func (s *Sandbox) Run(ctx context.Context, t Task) (Outcome, error) {
	start := time.Now()
	key, err := s.prepare(&t)
	if err != nil {
		return Outcome{}, err
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}
	mod, err := s.mods.get(key, t.Module)
	loaded := time.Now()
	var compileErr *compileError
	switch {
	case errors.As(err, &compileErr):
		out := refused(err, &stderrBuffer{max: stderrTail})
		out.Load = loaded.Sub(start)
		return out, nil
	case err != nil:
		return Outcome{}, err
	}
	defer s.mods.release(mod)
	runCtx, cancel := runContext(ctx)
	defer cancel(nil)
	runCtx, stop := context.WithTimeoutCause(runCtx, t.Wall, errWall)
	defer stop()
	out := s.execute(runCtx, cancel, mod, t)
	out.Load, out.Wall = loaded.Sub(start), time.Since(loaded)
	if out.Killed == "" && ctx.Err() != nil {
		return out, fmt.Errorf("sandbox: %w", ctx.Err())
	}
	return out, nil
}

// runContext returns a context that ends with ctx (with its cause) or
// when cancelled, but carries none of ctx's values: wazero reads
// experimental options from the context it instantiates with, one of
// which (experimental/sock.WithConfig) lends the guest TCP listeners, and
// a caller's context must not be able to open that door.
func runContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	runCtx, cancel := context.WithCancelCause(context.Background())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return runCtx, func(cause error) {
		stop()
		cancel(cause)
	}
}

// prepare checks t, fills its defaults and returns its module's key.
func (s *Sandbox) prepare(t *Task) (moduleKey, error) {
	if t.Wall <= 0 {
		return moduleKey{}, fmt.Errorf("sandbox: task wall-clock limit %v is not positive", t.Wall)
	}
	if t.Memory == 0 {
		t.Memory = s.memory
	}
	if t.Memory < 0 || t.Memory > MaxMemory {
		return moduleKey{}, fmt.Errorf("sandbox: task memory limit %d is outside [1, %d] bytes", t.Memory, int64(MaxMemory))
	}
	if t.Name == "" {
		t.Name = "main"
	}
	if len(t.Module) > 0 {
		sum := sha256.Sum256(t.Module)
		if t.ModuleID != ([32]byte{}) && t.ModuleID != sum {
			return moduleKey{}, fmt.Errorf("sandbox: module bytes have SHA-256 %x, not the task's ModuleID %x", sum, t.ModuleID)
		}
		t.ModuleID = sum
	} else if t.ModuleID == ([32]byte{}) {
		return moduleKey{}, errors.New("sandbox: task has neither Module nor ModuleID")
	}
	dir, err := checkWorkDir(t.WorkDir)
	if err != nil {
		return moduleKey{}, err
	}
	t.WorkDir = dir
	return moduleKey{pages: pages(t.Memory), id: t.ModuleID}, nil
}

// pages rounds a memory limit in bytes up to whole pages.
func pages(memory int64) uint32 {
	return uint32((memory + PageSize - 1) / PageSize)
}

// Causes of a run context's end that the sandbox itself brought about.
var (
	errWall   = errors.New(KilledWall)
	errOutput = errors.New(KilledOutput)
)

// execute instantiates the module for t, calls its _start and turns what
// happened into an Outcome. cancel ends runCtx, whose end (with
// WithCloseOnContextDone) stops the guest.
func (s *Sandbox) execute(runCtx context.Context, cancel context.CancelCauseFunc, mod *loadedModule, t Task) Outcome {
	stdout := &outputBuffer{max: s.maxOutput, over: func() { cancel(errOutput) }}
	stderr := &stderrBuffer{max: stderrTail}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // called below, so that the memory can be read after
		WithArgs(append([]string{t.Name}, t.Args...)...).
		WithStdin(bytes.NewReader(t.Stdin)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(workDirFS(t.WorkDir)).
		WithRandSource(rand.NewChaCha8(randSeed))
	// No WithEnv, so no environment; no WithSys* clock options, so wazero's
	// deterministic clocks: the wall clock starts at a fixed instant and
	// every reading of either clock advances it by 1 ms, and sleeping
	// returns at once.
	inst, err := mod.rt.InstantiateModule(runCtx, mod.compiled, cfg)
	if err != nil {
		return refused(err, stderr)
	}
	defer inst.Close(context.Background())
	mem := inst.ExportedMemory("memory") // WASI's calls use this one
	start := inst.ExportedFunction("_start")
	if start == nil {
		return refused(errors.New("module exports no _start function (not a WASI command)"), stderr)
	}
	_, err = start.Call(runCtx)
	out := Outcome{Output: stdout.buf.Bytes()}
	if mem != nil {
		out.Memory = int64(mem.Size())
	}
	s.classify(&out, err, context.Cause(runCtx), stdout, stderr, t)
	return out
}

// classify sets out's exit code and Killed reason from the error _start
// returned and the cause of the run context's end (nil if it has not
// ended), and fills out.Stderr.
func (s *Sandbox) classify(out *Outcome, err, cause error, stdout *outputBuffer, stderr *stderrBuffer, t Task) {
	var exit *sys.ExitError
	switch {
	case stdout.exceeded:
		out.ExitCode, out.Killed = ExitKilled, KilledOutput
		stderr.note(fmt.Sprintf("output limit: stdout exceeded %d bytes", s.maxOutput))
	case errors.As(err, &exit) && isContextExit(exit.ExitCode()) && cause != nil:
		out.ExitCode = ExitKilled
		if errors.Is(cause, errWall) {
			out.Killed = KilledWall
			stderr.note(fmt.Sprintf("wall-clock limit: stopped after %v", t.Wall))
		} else {
			stderr.note("stopped: " + cause.Error())
		}
		out.Stderr = stderr.String()
		return
	case errors.As(err, &exit):
		out.ExitCode = int(exit.ExitCode())
	case err != nil:
		out.ExitCode = ExitTrap
		stderr.note("trap: " + firstLine(err.Error()))
	}
	if out.ExitCode != 0 && out.Killed == "" && (stderr.outOfMemory || out.Memory >= t.Memory) {
		out.Killed = KilledMemory
		stderr.note(fmt.Sprintf("memory limit: the guest failed for want of memory (limit %d bytes, %d in use)", t.Memory, out.Memory))
	}
	out.Stderr = stderr.String()
}

// isContextExit reports whether a wazero exit code says the run context
// ended (WithCloseOnContextDone), not that the guest exited.
func isContextExit(code uint32) bool {
	return code == sys.ExitCodeDeadlineExceeded || code == sys.ExitCodeContextCanceled
}

// refused is the Outcome of a module that could not start.
func refused(err error, stderr *stderrBuffer) Outcome {
	stderr.note("cannot run: " + firstLine(err.Error()))
	out := Outcome{ExitCode: ExitCannotRun, Stderr: stderr.String()}
	if isMemoryRefusal(err) {
		out.Killed = KilledMemory
	}
	return out
}

// checkWorkDir returns dir made absolute after checking that it is an
// existing directory holding only regular files and directories: no
// symbolic link (the guest cannot make one, and one already there could
// lead it outside) and no FIFO, socket or device (opening one can block in
// the host, where the wall-clock limit cannot stop the guest).
func checkWorkDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("sandbox: task has no WorkDir")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: WorkDir: %w", err)
	}
	if fi, err := os.Lstat(abs); err != nil {
		return "", fmt.Errorf("sandbox: WorkDir: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: WorkDir %s is not a directory", abs)
	}
	err = filepath.WalkDir(abs, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link, which could lead the guest outside", path)
		case !d.Type().IsRegular() && !d.IsDir():
			return fmt.Errorf("%s is neither a regular file nor a directory (a FIFO or device could block the guest past its wall-clock limit)", path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("sandbox: WorkDir: %w", err)
	}
	return abs, nil
}
