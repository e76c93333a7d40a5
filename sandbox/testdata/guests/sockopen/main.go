//go:build wasip1

// Command sockopen imports sock_open, the socket-creating call some
// runtimes (WasmEdge) add to WASI preview 1 under its module name; WASI
// preview 1 itself has no way to create a socket, so a runtime without the
// extension cannot link this module.
package main

import (
	"fmt"
	"os"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 sock_open
func sockOpen(family, kind int32, fd unsafe.Pointer) int32

func main() {
	var fd int32
	if errno := sockOpen(1, 1, unsafe.Pointer(&fd)); errno != 0 {
		fmt.Fprintf(os.Stderr, "sockopen: sock_open: errno %d\n", errno)
		os.Exit(1)
	}
	fmt.Println("opened", fd)
}
