// Command hog uses up a resource: "alloc MB" allocates and touches MB MiB;
// "spin" loops forever; "print BYTES" writes that many bytes to stdout;
// "exit CODE" exits with that code. It prints what it did on success.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hog:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 1 && args[0] == "spin" {
		x := uint64(1)
		for {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if len(args) != 2 {
		return fmt.Errorf("usage: alloc MB | spin | print BYTES | exit CODE, got %q", args)
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	switch args[0] {
	case "alloc":
		buf := make([]byte, n<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = byte(i >> 12)
		}
		runtime.KeepAlive(buf)
		fmt.Println("allocated", n, "MiB")
	case "print":
		w := bufio.NewWriter(os.Stdout)
		for range n {
			w.WriteByte('x')
		}
		return w.Flush()
	case "exit":
		os.Exit(n)
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	return nil
}
