package pool_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
)

// TestStateCarriesItsProof: a state is written with its proof in one
// record (no key apart), and a restarted node holds the proof again. A
// store written before — state without proof, the proof apart — loads
// with its proof, and the job's deletion removes the proof apart too.
// Control: the restart after the old layout was written finds the proof
// only through the keys apart (the state record no longer has it).
func TestStateCarriesItsProof(t *testing.T) {
	pn := startPoolNet(t, 6, 10, 43)
	keys := pn.net.Node(0).Pool().Keys()
	if len(keys) < 2 {
		t.Fatalf("node 0 holds %d jobs, want 2", len(keys))
	}
	now := pn.clock.Now().UnixMilli()
	proofs := map[string][]byte{}
	for _, k := range keys[:2] {
		proofs[string(k)] = pn.collectedProof(k, now)
		if _, err := pn.net.Node(0).Pool().Merge(k, job.State{Phase: job.Collected, At: now}, proofs[string(k)], nil); err != nil {
			t.Fatal(err)
		}
	}
	restart := func() {
		t.Helper()
		if err := pn.net.Kill(0); err != nil {
			t.Fatal(err)
		}
		if err := pn.net.Restart(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	newKey, oldKey := keys[0], keys[1]
	if apart := pn.net.Node(0).Pool().ProofApartForTests(newKey); apart != nil {
		t.Fatal("a proof written apart from its state")
	}
	if err := pn.net.Node(0).Pool().WriteOldProofForTests(oldKey); err != nil {
		t.Fatal(err)
	}
	restart()
	p := pn.net.Node(0).Pool()
	for _, k := range [][]byte{newKey, oldKey} {
		if got := p.Proof(k); !bytes.Equal(got, proofs[string(k)]) {
			t.Fatalf("job %x: after a restart the proof is %x, want %x", k, got, proofs[string(k)])
		}
	}
	if p.ProofApartForTests(oldKey) == nil {
		t.Fatal("control: the old layout was not written")
	}
	pn.clock.Advance(2*time.Hour + time.Minute)
	if _, deleted := p.ExpireNow(); deleted < 2 {
		t.Fatalf("%d collected jobs deleted after T_collect, want 2", deleted)
	}
	if p.ProofApartForTests(oldKey) != nil {
		t.Fatal("the proof kept apart outlived its job")
	}
	at := pn.clock.Now().UnixMilli()
	for _, k := range [][]byte{newKey, oldKey} {
		if !p.GoneForTests(k, at) {
			t.Fatalf("job %x has no gone record", k)
		}
	}
}
