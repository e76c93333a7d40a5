//go:build !(linux || darwin)

package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
)

var errUnsupported = errors.New("runner: running applications is supported on Linux and macOS only")

func (r *Runner) start(context.Context, string, []string, string, []string, Task) (Outcome, error) {
	return Outcome{}, errUnsupported
}

// Exec is the body of `up app exec`; on this platform it only reports that
// running applications under limits is unsupported.
func Exec(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, errUnsupported)
	return ExitLauncher
}
