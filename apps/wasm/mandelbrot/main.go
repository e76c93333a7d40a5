// Command mandelbrot is the built-in application mandelbrot as a
// WebAssembly module: build it with GOOS=wasip1 GOARCH=wasm and run it in
// the sandbox package; its output is byte-identical to `up app exec
// mandelbrot` with the same arguments.
package main

import "github.com/up-pool/up/apps/wasm/guest"

func main() { guest.Main("mandelbrot") }
