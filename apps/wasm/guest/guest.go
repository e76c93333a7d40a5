// Package guest is the main function of the built-in applications compiled
// to WebAssembly (GOOS=wasip1 GOARCH=wasm): each apps/wasm/<name> command
// runs the same apps.App.Main as the native built-in, so both give the same
// bytes for the same arguments.
package guest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/up-pool/up/apps"
)

// Main runs the built-in application name with the process's arguments,
// stdout and current directory, and exits as `up app exec` does: with the
// code of an apps.ExitError, or 1 after printing any other error to stderr.
func Main(name string) {
	os.Exit(run(name, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the built-in application name and returns its exit code.
func run(name string, args []string, stdout, stderr io.Writer) int {
	app, ok := apps.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "no built-in application %q\n", name)
		return 127
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	w := bufio.NewWriterSize(stdout, 64<<10)
	err = app.Main(args, w, wd)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return exitCode(err, stderr)
}

// exitCode maps an application's error to an exit code, printing plain
// errors (as runner.Exec does for the native built-ins).
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var e apps.ExitError
	var pe *apps.ExitError
	code := 1
	switch {
	case errors.As(err, &e):
		code = e.Code
	case errors.As(err, &pe) && pe != nil:
		code = pe.Code
	default:
		fmt.Fprintln(stderr, err)
	}
	if code < 1 || code > 255 {
		return 1
	}
	return code
}
