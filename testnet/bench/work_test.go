package bench

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
)

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

// TestCPUByWork: a synthetic profile's samples summed by kind of work,
// over all samples and over one party's.
func TestCPUByWork(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	verify, write, sel := fn(1, "crypto/ed25519.Verify"), fn(2, "internal/poll.(*FD).Write"), fn(3, "github.com/up-pool/up/index.(*Table).Select")
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	lv, lw, ls := loc(1, verify), loc(2, write), loc(3, sel)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Function:   []*profile.Function{verify, write, sel},
		Location:   []*profile.Location{lv, lw, ls},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lv, ls}, Value: []int64{1, 300}, Label: map[string][]string{"party": {"project"}}},
			{Location: []*profile.Location{lw}, Value: []int64{1, 200}},
			{Location: []*profile.Location{ls}, Value: []int64{1, 50}, Label: map[string][]string{"party": {"project"}}},
		},
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	all, err := cpuByWork(buf.Bytes(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if all["signatures"] != 300 || all["socket syscalls"] != 200 || all[otherWork] != 50 || len(all) != 3 {
		t.Fatalf("all samples by work: %v", all)
	}
	proj, err := cpuByWork(buf.Bytes(), "party", "project")
	if err != nil {
		t.Fatal(err)
	}
	if proj["signatures"] != 300 || proj[otherWork] != 50 || len(proj) != 2 {
		t.Fatalf("project's samples by work: %v", proj)
	}
	if _, err := cpuByWork([]byte("not a profile"), "", ""); err == nil {
		t.Fatal("garbage parsed as a profile")
	}
}
