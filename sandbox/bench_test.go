package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/sandbox"
)

// BenchmarkStartup measures what a run costs before the application does
// anything: a Go guest that returns from main at once (noop), and a
// hand-assembled module whose _start returns (tiny), when the module must
// be compiled, is in the compilation cache directory of an earlier
// process, or is loaded in this Sandbox (instantiate and run only; by-id
// skips hashing the module's bytes).
func BenchmarkStartup(b *testing.B) {
	noop := guest(b, "noop")
	for _, m := range []struct {
		name   string
		module []byte
	}{{"go-noop", noop}, {"tiny", tinyNoop}} {
		task := sandbox.Task{Module: m.module, WorkDir: b.TempDir(), Wall: time.Minute}
		b.Run(m.name+"/compile", func(b *testing.B) {
			for b.Loop() {
				s := mustNew(b, sandbox.Config{})
				mustRun(b, s, task)
				s.Close()
			}
		})
		b.Run(m.name+"/cache-dir", func(b *testing.B) {
			cfg := sandbox.Config{CacheDir: filepath.Join(b.TempDir(), "cache")}
			s := mustNew(b, cfg)
			mustRun(b, s, task) // fills the directory
			s.Close()
			for b.Loop() {
				s := mustNew(b, cfg)
				mustRun(b, s, task)
				s.Close()
			}
		})
		b.Run(m.name+"/loaded", func(b *testing.B) {
			s := mustNew(b, sandbox.Config{})
			defer s.Close()
			mustRun(b, s, task)
			for b.Loop() {
				mustRun(b, s, task)
			}
		})
		b.Run(m.name+"/loaded-by-id", func(b *testing.B) {
			s := mustNew(b, sandbox.Config{})
			defer s.Close()
			mustRun(b, s, task)
			byID := task
			byID.Module, byID.ModuleID = nil, sha256.Sum256(m.module)
			for b.Loop() {
				mustRun(b, s, byID)
			}
		})
	}
}

// BenchmarkMandelbrot runs testnet/demo's mandelbrot tiles (64×64 pixels,
// maxiter 256) natively in-process and as WebAssembly in the sandbox
// (module loaded): tile (3, 4) holds the main cardioid, the slowest tile;
// image is all 64 tiles of the demo's 8×8 image, one after the other.
func BenchmarkMandelbrot(b *testing.B) {
	tile := [][]string{demoTileArgs(3, 4)}
	var image [][]string
	for ty := range demoTiles {
		for tx := range demoTiles {
			image = append(image, demoTileArgs(tx, ty))
		}
	}
	for _, w := range []struct {
		name string
		runs [][]string
	}{{"tile", tile}, {"image", image}} {
		benchNativeAndWasm(b, w.name, "mandelbrot", w.runs)
	}
	b.Run("tile/wazero-unchecked", func(b *testing.B) { benchUnchecked(b, "mandelbrot", tile[0]) })
}

// benchUnchecked runs app under bare wazero without WithCloseOnContextDone,
// which the sandbox cannot do without (a looping guest would never stop):
// it measures what the termination checks wazero then compiles into every
// loop and function cost.
func benchUnchecked(b *testing.B, app string, args []string) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, guest(b, app))
	if err != nil {
		b.Fatal(err)
	}
	cfg := wazero.NewModuleConfig().WithName("").WithArgs(append([]string{app}, args...)...)
	for b.Loop() {
		if _, err := rt.InstantiateModule(ctx, compiled, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashchain runs hashchain 10000 (10,001 SHA-256 hashes) natively
// and as WebAssembly: the crypto case, where native Go has assembly and
// WebAssembly only the generic code.
func BenchmarkHashchain(b *testing.B) {
	args := []string{"10000", "seed"}
	benchNativeAndWasm(b, "10000", "hashchain", [][]string{args})
	b.Run("10000/wazero-unchecked", func(b *testing.B) { benchUnchecked(b, "hashchain", args) })
}

// benchNativeAndWasm runs app with each argument list in runs per
// iteration, natively (name/native) and in the sandbox (name/wasm).
func benchNativeAndWasm(b *testing.B, name, app string, runs [][]string) {
	module := guest(b, app)
	main, _ := apps.Lookup(app)
	dir := b.TempDir()
	b.Run(name+"/native", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			for _, args := range runs {
				buf.Reset()
				if err := main.Main(args, &buf, dir); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run(name+"/wasm", func(b *testing.B) {
		s := mustNew(b, sandbox.Config{})
		defer s.Close()
		task := sandbox.Task{Module: module, Name: app, Args: runs[0], WorkDir: dir, Wall: time.Minute}
		mustRun(b, s, task) // compile outside the timing
		task.Module, task.ModuleID = nil, sha256.Sum256(module)
		for b.Loop() {
			for _, args := range runs {
				task.Args = args
				mustRun(b, s, task)
			}
		}
	})
}

func mustNew(b *testing.B, cfg sandbox.Config) *sandbox.Sandbox {
	b.Helper()
	s, err := sandbox.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// mustRun runs t and fails the benchmark unless it exits 0.
func mustRun(b *testing.B, s *sandbox.Sandbox, t sandbox.Task) {
	b.Helper()
	out, err := s.Run(context.Background(), t)
	if err != nil || out.ExitCode != 0 {
		b.Fatalf("Run: %v, exit %d: %s", err, out.ExitCode, out.Stderr)
	}
}
