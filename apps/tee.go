package apps

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// teeMain copies standard input to stdout and to each named file of the
// work directory, as tee does: the built-in that exercises a job's
// standard input and output files.
func teeMain(args []string, stdout io.Writer, workdir string) error {
	if len(args) > maxDigestFiles {
		return fmt.Errorf("tee: want at most %d file names, got %d", maxDigestFiles, len(args))
	}
	writers := []io.Writer{stdout}
	for _, name := range args {
		if err := checkWorkFile("tee", name); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(workdir, name))
		if err != nil {
			return fmt.Errorf("tee: file %s: cannot be created", name)
		}
		defer f.Close()
		writers = append(writers, f)
	}
	if _, err := io.Copy(io.MultiWriter(writers...), os.Stdin); err != nil {
		return fmt.Errorf("tee: copy standard input: %w", err)
	}
	return nil
}
