// Command files tries file accesses: "read PATH" prints the file's
// contents; "write PATH TEXT" creates the file; "symlink TARGET LINK"
// creates a symbolic link and then reads through it. Any failure is
// printed on stderr and exits 1.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "files:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "read":
		return cat(args[1])
	case len(args) == 3 && args[0] == "write":
		return os.WriteFile(args[1], []byte(args[2]), 0o644)
	case len(args) == 3 && args[0] == "symlink":
		if err := os.Symlink(args[1], args[2]); err != nil {
			return err
		}
		return cat(args[2])
	}
	return fmt.Errorf("usage: read PATH | write PATH TEXT | symlink TARGET LINK, got %q", args)
}

func cat(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}
