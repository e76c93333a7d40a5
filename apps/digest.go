package apps

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Bounds of digest's arguments.
const (
	maxDigestFiles  = 64
	maxDigestRounds = 100_000_000
)

// digestMain prints, for each named file of the work directory, its
// SHA-256 and its name, as sha256sum does: a job's inputs (input0,
// input1, …) read back, so a result proves the data reached the client.
// With "-rounds N" first, each digest is hashed N more times (SHA-256 of
// the 32-byte digest, as hashchain), a knob for the work per file.
func digestMain(args []string, stdout io.Writer, workdir string) error {
	rounds := int64(0)
	if len(args) >= 2 && args[0] == "-rounds" {
		n, err := intArg("digest", "rounds", args[1], 0, maxDigestRounds)
		if err != nil {
			return err
		}
		rounds, args = n, args[2:]
	}
	if len(args) == 0 || len(args) > maxDigestFiles {
		return fmt.Errorf("digest: want 1 to %d file names, got %d", maxDigestFiles, len(args))
	}
	for _, name := range args {
		if err := checkWorkFile("digest", name); err != nil {
			return err
		}
		sum, err := digestFile(filepath.Join(workdir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Not the system's words or the path: the same message on
			// every platform, natively and as WebAssembly.
			return fmt.Errorf("digest: file %s: not found", name)
		case err != nil:
			return fmt.Errorf("digest: file %s: cannot be read", name)
		}
		for range rounds {
			s := sha256.Sum256(sum)
			sum = s[:]
		}
		if _, err := fmt.Fprintf(stdout, "%s  %s\n", hex.EncodeToString(sum), name); err != nil {
			return err
		}
	}
	return nil
}

// checkWorkFile refuses a file argument of app that may name a file
// outside the work directory.
func checkWorkFile(app, name string) error {
	if name == "" || filepath.IsAbs(name) || strings.Contains(name, "..") {
		return fmt.Errorf("%s: file %q: want a name inside the work directory", app, name)
	}
	return nil
}

func digestFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
