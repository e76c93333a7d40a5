package testnet

import "testing"

// TestWorkKind: stacks, leaf first, charged to the first kind in priority
// order that any of their frames belongs to.
func TestWorkKind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		funcs []string
		want  string
	}{
		{"verify", []string{"crypto/internal/fips140/edwards25519/field.feMul", "crypto/ed25519.Verify", "github.com/up-pool/up/job.(*Signed).Verify"}, "signatures"},
		{"batch verify", []string{"github.com/oasisprotocol/curve25519-voi/curve.vecMul_AVX2", "github.com/up-pool/up/claimnet.verifyGrants"}, "signatures"},
		{"socket write", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "github.com/libp2p/go-libp2p/p2p/security/noise.(*secureSession).Write"}, "socket syscalls"},
		{"noise cipher", []string{"golang.org/x/crypto/chacha20poly1305.chacha20Poly1305Seal", "github.com/libp2p/go-libp2p/p2p/security/noise.(*secureSession).Write"}, "channel encryption"},
		{"wal write", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", "github.com/cockroachdb/pebble/v2/wal.(*LogWriter).flushPending"}, "store"},
		{"box open", []string{"golang.org/x/crypto/internal/poly1305.update", "golang.org/x/crypto/nacl/secretbox.Open", "golang.org/x/crypto/nacl/box.OpenAnonymous"}, "result sealing"},
		{"x25519 in open", []string{"github.com/oasisprotocol/curve25519-voi/curve.(*MontgomeryPoint).mul", "github.com/oasisprotocol/curve25519-voi/primitives/x25519.ScalarMult", "github.com/up-pool/up/project.(*opener).open"}, "result sealing"},
		{"alloc in decode", []string{"runtime.mallocgc", "github.com/fxamacker/cbor/v2.(*decoder).parseToValue"}, "encoding"},
		{"gc worker", []string{"runtime.scanObjectsSmall", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "GC and allocation"},
		{"map lookup", []string{"internal/runtime/maps.ctrlGroup.matchH2", "github.com/up-pool/up/index.(*Table).Select"}, otherWork},
		{"empty", nil, otherWork},
	} {
		if got := workKind(tc.funcs); got != tc.want {
			t.Errorf("%s: workKind = %q, want %q", tc.name, got, tc.want)
		}
	}
}
