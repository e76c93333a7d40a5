package apps

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxHashseqSteps bounds hashseq's step (job.MaxSteps).
const maxHashseqSteps = 10_000

// hashseqMain is one step of a sequence: it continues the hash chain of
// the checkpoint file in the work directory (none at step 1: the chain
// starts from SHA-256(seed)) by n rounds and prints the checkpoint with
// the line "step <step> <hex digest>" added, so the final checkpoint
// lists every step in order.
func hashseqMain(args []string, stdout io.Writer, workdir string) error {
	if err := wantArgs("hashseq", args, "n", "seed", "step"); err != nil {
		return err
	}
	n, err := intArg("hashseq", "n", args[0], 0, maxHashchain)
	if err != nil {
		return err
	}
	step, err := intArg("hashseq", "step", args[2], 1, maxHashseqSteps)
	if err != nil {
		return err
	}
	prev, err := os.ReadFile(filepath.Join(workdir, "checkpoint"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hashseq: %w", err)
	}
	next, err := HashseqStep(prev, n, args[1], step)
	if err != nil {
		return err
	}
	_, err = stdout.Write(next)
	return err
}

// HashseqStep is hashseq's step on the checkpoint prev: prev with the
// line "step <step> <hex>" added, hex being SHA-256 applied n times to
// the last line's digest (to SHA-256(seed) at step 1). It refuses a
// checkpoint whose last step is not step − 1.
func HashseqStep(prev []byte, n int64, seed string, step int64) ([]byte, error) {
	sum := sha256.Sum256([]byte(seed))
	lines := strings.Split(strings.TrimSpace(string(prev)), "\n")
	if len(prev) == 0 {
		lines = nil
	}
	if int64(len(lines)) != step-1 {
		return nil, fmt.Errorf("hashseq: step %d from a checkpoint of %d steps", step, len(lines))
	}
	if len(lines) > 0 {
		var last int64
		var hx string
		if _, err := fmt.Sscanf(lines[len(lines)-1], "step %d %s", &last, &hx); err != nil || last != step-1 {
			return nil, fmt.Errorf("hashseq: checkpoint's last line %q is not step %d", lines[len(lines)-1], step-1)
		}
		b, err := hex.DecodeString(hx)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("hashseq: checkpoint's digest %q", hx)
		}
		copy(sum[:], b)
	}
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	var out bytes.Buffer
	out.Write(bytes.TrimSpace(prev))
	if out.Len() > 0 {
		out.WriteByte('\n')
	}
	fmt.Fprintf(&out, "step %d %s\n", step, hex.EncodeToString(sum[:]))
	return out.Bytes(), nil
}
