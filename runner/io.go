package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxStdin bounds a task's standard input, in bytes: a WebAssembly
// module's is held in memory whole.
const MaxStdin = 256 << 20

// validateIO checks a task's standard input (one of its inputs) and
// output names (plain names of the work directory).
func validateIO(t Task) error {
	if t.Stdin != "" {
		if _, ok := t.Inputs[t.Stdin]; !ok {
			return fmt.Errorf("runner: standard input %q is not one of the task's inputs", t.Stdin)
		}
	}
	for _, name := range t.Outputs {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || !filepath.IsLocal(name) {
			return fmt.Errorf("runner: output name %q is not a plain file name", name)
		}
	}
	return nil
}

// openStdin opens the task's standard input in its work directory dir,
// or returns nil when it has none.
func openStdin(dir string, t Task) (*os.File, error) {
	if t.Stdin == "" {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(t.Stdin)))
	if err != nil {
		return nil, fmt.Errorf("runner: standard input: %w", err)
	}
	return f, nil
}

// readStdin reads the task's standard input whole (at most MaxStdin
// bytes), for a module.
func readStdin(dir string, t Task) ([]byte, error) {
	f, err := openStdin(dir, t)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("runner: standard input: %w", err)
	}
	if len(b) > MaxStdin {
		return nil, fmt.Errorf("runner: standard input %q is over %d bytes", t.Stdin, MaxStdin)
	}
	return b, nil
}

// collectOutputs reads the task's output files from its work directory
// into out.Files once the application has ended: only regular files (a
// symbolic link is not followed: an application must not hand the
// volunteer's files to the project), within what MaxOutput leaves after
// stdout; a file not written is nil. Past the bound, out.Killed says
// KilledOutput and the rest are left out.
func (r *Runner) collectOutputs(out *Outcome, dir string, t Task) {
	if len(t.Outputs) == 0 {
		return
	}
	room := r.maxOutput - int64(len(out.Output))
	out.Files = make([][]byte, len(t.Outputs))
	for i, name := range t.Outputs {
		b, err := readRegular(filepath.Join(dir, name), room)
		switch {
		case errors.Is(err, errTooLarge):
			if out.Killed == "" {
				out.Killed = KilledOutput
			}
			return
		case err != nil:
			continue // not written, or not a regular file
		}
		out.Files[i] = b
		room -= int64(len(b))
	}
}

var errTooLarge = errors.New("output file over the output bound")

// readRegular reads the regular file at path (not through a symbolic
// link), at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, fmt.Errorf("%s changed while read", filepath.Base(path))
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}
