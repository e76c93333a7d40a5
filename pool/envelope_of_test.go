package pool

import (
	"crypto/ed25519"
	"testing"

	"github.com/up-pool/up/result"
)

// TestEnvelopeOf: a proof checked before is taken again with a sender's
// envelope only when the envelope is the one the finished state names —
// of this job, with this digest; another job's, another result's or
// garbage send the state to the full check, which refuses a mismatch.
func TestEnvelopeOf(t *testing.T) {
	_, clientKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	seal := func(job []byte, out string) *result.Envelope {
		t.Helper()
		e, err := result.Seal(result.Inner{Job: job, ClientCert: []byte{1}, Output: []byte(out), At: 1}, clientKey, make([]byte, 32), nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	job, other := []byte("job-a"), []byte("job-b")
	env := seal(job, "42")
	digest := env.Digest()
	for _, c := range []struct {
		name string
		env  []byte
		want bool
	}{
		{"the state's envelope", env.Encode(), true},
		{"another result of the job", seal(job, "43").Encode(), false},
		{"another job's envelope", seal(other, "42").Encode(), false},
		{"garbage", []byte{0x82, 0x01}, false},
		{"none", nil, false},
	} {
		if got := envelopeOf(job, digest, c.env); got != c.want {
			t.Errorf("%s: envelopeOf = %v, want %v", c.name, got, c.want)
		}
	}
}
