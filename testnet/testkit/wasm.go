package testkit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// wasmBuilds are the WebAssembly modules built so far by this test binary,
// by package.
var wasmBuilds struct {
	mu   sync.Mutex
	mods map[string]wasmBuild
}

type wasmBuild struct {
	module []byte
	err    error
}

// WasmModule returns the Go command pkg (an import path of this module,
// such as github.com/up-pool/up/apps/wasm/mandelbrot) built as a
// WebAssembly module (GOOS=wasip1 GOARCH=wasm, -trimpath), building it on
// the first call of the test binary; it skips the test if the go tool is
// not on PATH, and fails it if the build fails.
func WasmModule(tb testing.TB, pkg string) []byte {
	tb.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		tb.Skip("go tool not on PATH: cannot build WebAssembly module ", pkg)
	}
	wasmBuilds.mu.Lock()
	defer wasmBuilds.mu.Unlock()
	b, ok := wasmBuilds.mods[pkg]
	if !ok {
		b.module, b.err = buildWasm(pkg)
		if wasmBuilds.mods == nil {
			wasmBuilds.mods = map[string]wasmBuild{}
		}
		wasmBuilds.mods[pkg] = b
	}
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.module
}

// buildWasm builds pkg for wasip1/wasm in a temporary directory and reads
// the module.
func buildWasm(pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "testkit-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "module.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for wasip1/wasm: %w\n%s", pkg, err, stderr.Bytes())
	}
	return os.ReadFile(out)
}
