package pool_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/up-pool/up/job"
)

// TestStateWrittenApart: a held job's state change is written apart from
// its record, which stays byte for byte as accepted (no read and rewrite
// of the signed spec per change), and a restarted node loads the latest
// state. Control: a load that ignored the states written apart would
// bring the job back ready.
func TestStateWrittenApart(t *testing.T) {
	pn := startPoolNet(t, 6, 10, 41)
	nd := pn.net.Node(0)
	keys := nd.Pool().Keys()
	if len(keys) == 0 {
		t.Fatal("node 0 holds no job")
	}
	key := keys[0]
	before, err := nd.Pool().RecordForTests(key)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := nd.Pool().Lookup(key)
	now := pn.clock.Now().UnixMilli()
	claimed := job.State{Phase: job.Claimed, Client: []byte("c"), Start: now, Deadline: now + h.TFinish}
	if _, err := nd.Pool().Apply(key, claimed); err != nil {
		t.Fatal(err)
	}
	after, err := nd.Pool().RecordForTests(key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the job's record was rewritten by a state change")
	}
	if err := pn.net.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := pn.net.Restart(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	st, ok := pn.net.Node(0).Pool().State(key)
	if !ok || st.Phase != job.Claimed || st.Start != now || !bytes.Equal(st.Client, claimed.Client) {
		t.Fatalf("after a restart the job is %+v (held %v), want claimed at %d", st, ok, now)
	}
}
