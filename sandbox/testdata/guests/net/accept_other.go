//go:build !wasip1

package main

// accept is only meaningful under WASI; elsewhere it reports ENOSYS (52).
func accept(int32) int32 { return 52 }
