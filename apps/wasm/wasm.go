// Package wasm holds the built-in applications compiled to one
// WebAssembly module (command apps/wasm/builtin, GOOS=wasip1 GOARCH=wasm),
// embedded so that `up demo` and the testnets ship a real module through
// the overlay without a Go toolchain. The module runs the built-in its
// argv[0] names and gives the same bytes as the native one.
//
// Regenerate builtin.wasm after changing package apps, with the Go
// version in builtin.wasm.go-version (the build is reproducible with it:
// TestBuiltinModuleUpToDate):
//
//	go generate ./apps/wasm
package wasm

import _ "embed" // Builtin

//go:generate sh -c "GOOS=wasip1 GOARCH=wasm go build -trimpath -buildvcs=false -ldflags=-s -o builtin.wasm ./builtin && go env GOVERSION > builtin.wasm.go-version"

// Builtin is the module's bytes.
//
//go:embed builtin.wasm
var Builtin []byte

// GoVersion is the Go release builtin.wasm was built with.
//
//go:embed builtin.wasm.go-version
var GoVersion string
