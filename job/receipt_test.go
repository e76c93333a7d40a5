package job_test

import (
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/up-pool/up/job"
)

// TestReceipt: a receipt verifies for exactly the keys, in the order, and
// the account it was signed for.
func TestReceipt(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	keys := [][]byte{[]byte("a"), []byte("bc")}
	sig := job.SignReceipt(priv, keys)
	for _, tc := range []struct {
		name string
		pub  ed25519.PublicKey
		keys [][]byte
		ok   bool
	}{
		{"signed keys", pub, keys, true},
		{"another account", other, keys, false},
		{"fewer keys", pub, keys[:1], false},
		{"other order", pub, [][]byte{keys[1], keys[0]}, false},
		{"keys split differently", pub, [][]byte{[]byte("ab"), []byte("c")}, false},
		{"short key", pub[:8], keys, false},
	} {
		err := job.VerifyReceipt(tc.pub, tc.keys, sig)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, job.ErrBadReceipt)) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
