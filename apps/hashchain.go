package apps

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
)

// maxHashchain bounds hashchain's n.
const maxHashchain = 1_000_000_000

func hashchainMain(args []string, stdout io.Writer, _ string) error {
	if err := wantArgs("hashchain", args, "n", "seed"); err != nil {
		return err
	}
	n, err := intArg("hashchain", "n", args[0], 0, maxHashchain)
	if err != nil {
		return err
	}
	sum := Hashchain(n, args[1])
	_, err = io.WriteString(stdout, hex.EncodeToString(sum[:])+"\n")
	return err
}

// Hashchain returns SHA-256 applied n times to the 32-byte digest
// SHA-256(seed); n = 0 gives SHA-256(seed).
func Hashchain(n int64, seed string) [32]byte {
	sum := sha256.Sum256([]byte(seed))
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}
