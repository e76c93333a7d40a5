package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/up-pool/up/project"
)

// progressEvery is how often a progress line is written when the output
// is not a terminal.
const progressEvery = 5 * time.Second

// isTerminal tells whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// bar returns a progress function for w (nil when quiet): a bar redrawn in
// place on a terminal, otherwise plain lines, one every progressEvery and
// one at the end, so a log file gets no carriage returns.
func bar(w io.Writer, quiet bool, what string) project.Progress {
	switch {
	case quiet:
		return nil
	case isTerminal(w):
		return termBar(w, what)
	}
	return progressLines(w, what, time.Now, progressEvery)
}

// termBar draws a progress bar on the terminal w.
func termBar(w io.Writer, what string) project.Progress {
	var b *progressbar.ProgressBar
	return func(done, total int) {
		if b == nil {
			b = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
				progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
		_ = b.Set(done)
	}
}

// progressLines writes "what: done/total" lines on w: the first call's, then
// at most one every interval, and the last (done == total).
func progressLines(w io.Writer, what string, now func() time.Time, interval time.Duration) project.Progress {
	var last time.Time
	lastDone := -1
	return func(done, total int) {
		t := now()
		if done == lastDone || (done < total && !last.IsZero() && t.Sub(last) < interval) {
			return
		}
		last, lastDone = t, done
		fmt.Fprintf(w, "%s: %d/%d\n", what, done, total)
	}
}
