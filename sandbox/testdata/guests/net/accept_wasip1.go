//go:build wasip1

package main

import "unsafe"

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd int32, flags int32, newFD unsafe.Pointer) int32

// accept calls sock_accept on fd and returns its errno (0: accepted).
func accept(fd int32) int32 {
	var newFD int32
	return sockAccept(fd, 0, unsafe.Pointer(&newFD))
}
