package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// TestResultShortOfMajorityNotDone: a result only 1 of the job's 5
// replicas stores (the other 4 refuse it) is not counted done, and the
// claim is not released either (the replica that stored it hands the
// finished state on): the cycle reports the delivery failed.
func TestResultShortOfMajorityNotDone(t *testing.T) {
	cn := startCaseNet(t, 66)
	key := cn.submit(t, "hashchain", []string{"10", "x"}, time.Hour)
	holders := cn.net.Holders(key)
	if len(holders) != 5 {
		t.Fatalf("job on %d nodes, want 5", len(holders))
	}
	for _, i := range holders[1:] {
		cn.net.Node(i).Endpoint().Handle(wire.ProtoResult, wire.MaxResultsFrame, []certs.Role{certs.RoleClient},
			func(context.Context, *overlay.Admitted, []byte) (any, error) {
				return nil, overlay.StatusErr(wire.StatusInternal, errors.New("result refused (test)"))
			})
	}
	_, c := cn.worker(t, "volunteer", []string{"hashchain"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ran, err := c.RunOne(ctx, "lhc")
	if !ran {
		t.Fatalf("no job run: %v", err)
	}
	st := c.Status()
	if err == nil || st.Done != 0 {
		t.Fatalf("result stored on 1 of 5 replicas: err %v, done %d; want a failed delivery, not done", err, st.Done)
	}
	if !strings.Contains(err.Error(), "1 of its 5 replicas stored it") || st.Released != 0 {
		t.Fatalf("err %v, released %d; want the count stored, and the claim kept", err, st.Released)
	}
}
