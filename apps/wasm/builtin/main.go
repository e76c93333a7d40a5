// Command builtin is every built-in application in one WebAssembly module
// (embedded in the up binary as apps/wasm.Builtin): it runs the one its
// argv[0] names — the job's app, which the sandbox passes as argv[0] — so
// a project ships one module for mandelbrot, hashchain, digest and the
// rest. Build it with `go generate ./apps/wasm`.
package main

import (
	"os"
	"path/filepath"

	"github.com/up-pool/up/apps/wasm/guest"
)

func main() { guest.Main(filepath.Base(os.Args[0])) }
