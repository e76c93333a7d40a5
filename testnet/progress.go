package testnet

import (
	"fmt"
	"io"
)

// LineLogger returns a printf that writes one line to w, or nothing when
// w is nil: the progress lines of a run on the harness (the bench, the
// scenarios, the demo).
func LineLogger(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format+"\n", args...)
		}
	}
}
