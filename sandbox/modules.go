package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Errors of modules.get that are the caller's, not the module's.
var (
	errClosed    = errors.New("sandbox: closed")
	errNotLoaded = errors.New("sandbox: task has no Module and its ModuleID is not loaded")
)

// compileError is a module's failure to compile: the module's fault, an
// Outcome, unlike modules.get's other errors.
type compileError struct{ err error }

func (e *compileError) Error() string { return "compile: " + e.err.Error() }
func (e *compileError) Unwrap() error { return e.err }

// moduleKey names a compiled module: wazero fixes a memory limit per
// runtime, so the same module under two limits is loaded twice (its
// machine code, in the shared compilation cache, is compiled once).
type moduleKey struct {
	pages uint32 // memory limit, in 64 KiB pages
	id    [32]byte
}

// modules keeps, per memory limit, a wazero runtime with WASI instantiated,
// and in it the modules compiled so far, so that a module's later runs
// only instantiate it: for a Go guest that does nothing, about 7 ms, where
// a new runtime takes about 60 ms with its code in a cache directory and
// 1 s to compile it (BenchmarkStartup, 2 cores).
type modules struct {
	cache wazero.CompilationCache
	max   int // loaded modules kept when not in use

	mu       sync.Mutex
	closed   bool
	tick     uint64
	runtimes map[uint32]*runtimeEntry
	loadedBy map[moduleKey]*loadedModule
}

// runtimeEntry is a runtime and the number of modules loaded in it.
type runtimeEntry struct {
	rt      wazero.Runtime
	modules int
}

// loadedModule is a module compiled (or being compiled) in the runtime of
// its memory limit.
type loadedModule struct {
	key      moduleKey
	rt       wazero.Runtime
	ready    chan struct{} // closed once compiled or err is set
	compiled wazero.CompiledModule
	err      error
	users    int    // runs holding it (get without release)
	lastUsed uint64 // modules.tick at its last release
}

func newModules(cache wazero.CompilationCache, max int) *modules {
	return &modules{cache: cache, max: max, runtimes: map[uint32]*runtimeEntry{}, loadedBy: map[moduleKey]*loadedModule{}}
}

// loaded reports whether key is compiled and loaded.
func (m *modules) loaded(key moduleKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	lm := m.loadedBy[key]
	if lm == nil {
		return false
	}
	select {
	case <-lm.ready:
		return lm.err == nil
	default:
		return false
	}
}

// get returns the module loaded under key, compiling wasm (which may be
// nil if key is loaded) if needed; the caller releases it. Runs that ask
// for a module being compiled wait for that compilation. A *compileError
// is the module's fault; errClosed, errNotLoaded and others the caller's
// or the host's.
func (m *modules) get(key moduleKey, wasm []byte) (*loadedModule, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errClosed
	}
	lm := m.loadedBy[key]
	if lm != nil {
		lm.users++
		m.mu.Unlock()
		<-lm.ready
		if lm.err != nil {
			m.release(lm)
			return nil, lm.err
		}
		return lm, nil
	}
	if len(wasm) == 0 {
		m.mu.Unlock()
		return nil, errNotLoaded
	}
	re, err := m.runtime(key.pages)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	lm = &loadedModule{key: key, rt: re.rt, ready: make(chan struct{}), users: 1}
	m.loadedBy[key] = lm
	re.modules++
	m.mu.Unlock()

	compiled, err := re.rt.CompileModule(context.Background(), wasm)

	m.mu.Lock()
	lm.compiled = compiled
	if err != nil {
		lm.err = &compileError{err}
		m.unload(lm)
	}
	close(lm.ready)
	m.mu.Unlock()
	if lm.err != nil {
		m.release(lm)
		return nil, lm.err
	}
	return lm, nil
}

// runtime returns the runtime for a memory limit, making it if needed;
// m.mu is held.
func (m *modules) runtime(pages uint32) (*runtimeEntry, error) {
	if re := m.runtimes[pages]; re != nil {
		return re, nil
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(m.cache).
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("sandbox: instantiate WASI: %w", err)
	}
	re := &runtimeEntry{rt: rt}
	m.runtimes[pages] = re
	return re, nil
}

// release gives back a module get returned, then drops the least recently
// used idle modules beyond m.max.
func (m *modules) release(lm *loadedModule) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lm.users--
	m.tick++
	lm.lastUsed = m.tick
	for len(m.loadedBy) > m.max {
		var oldest *loadedModule
		for _, c := range m.loadedBy {
			if c.users == 0 && c.compiled != nil && (oldest == nil || c.lastUsed < oldest.lastUsed) {
				oldest = c
			}
		}
		if oldest == nil {
			return
		}
		m.unload(oldest)
	}
}

// unload forgets lm, closing its compiled code and, with its last module,
// its runtime; m.mu is held.
func (m *modules) unload(lm *loadedModule) {
	if m.closed || m.loadedBy[lm.key] != lm {
		return // close closed it with its runtime
	}
	delete(m.loadedBy, lm.key)
	ctx := context.Background()
	if lm.compiled != nil {
		lm.compiled.Close(ctx)
	}
	re := m.runtimes[lm.key.pages]
	if re.modules--; re.modules == 0 {
		re.rt.Close(ctx)
		delete(m.runtimes, lm.key.pages)
	}
}

// close closes every runtime and the compilation cache.
func (m *modules) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	ctx := context.Background()
	for _, re := range m.runtimes {
		re.rt.Close(ctx)
	}
	m.runtimes, m.loadedBy = nil, nil
	return m.cache.Close(ctx)
}
