// Command echo reports what the sandbox shows a guest: its arguments, its
// environment, its working directory, its standard input, random bytes and
// clock readings, so tests can check that nothing leaks in from the host
// and that two runs give the same bytes.
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo: read stdin:", err)
		os.Exit(1)
	}
	cwd, _ := os.Getwd()
	random := make([]byte, 16)
	rand.Read(random)
	start := time.Now()
	time.Sleep(10 * time.Millisecond)
	fmt.Printf("args: %q\n", os.Args[1:])
	fmt.Printf("env: %q\n", os.Environ())
	fmt.Printf("cwd: %s\n", cwd)
	fmt.Printf("stdin: %q\n", stdin)
	fmt.Printf("rand: %x\n", random)
	fmt.Printf("time: %s, slept %s\n", start.UTC().Format(time.RFC3339Nano), time.Since(start))
	fmt.Fprintln(os.Stderr, "echo: done")
}
