package claim

import (
	"testing"

	"github.com/up-pool/up/job"
)

// TestServerUnsettled: a claim this node accepted is due for the
// certificate watch once old enough, until it is settled, released or its
// job finished; the oldest acceptance comes first.
func TestServerUnsettled(t *testing.T) {
	a, b := []byte("client-a"), []byte("client-b")
	newWith := func() (*Server[string], job.State) {
		srv := NewServer[string](srvTClaim, DefaultTSkew)
		st := job.State{Phase: job.Ready}
		if err := claimOn(t, srv, &st, a, 1000); err != nil {
			t.Fatal(err)
		}
		return srv, st
	}
	srv, st := newWith()
	if got := srv.Unsettled(999); len(got) != 0 {
		t.Fatalf("Unsettled before the acceptance: %+v; want none", got)
	}
	got := srv.Unsettled(1000)
	if len(got) != 1 || got[0].Job != "j" || string(got[0].Client) != "client-a" || got[0].Start != st.Start {
		t.Fatalf("Unsettled at the acceptance: %+v; want a's claim", got)
	}
	srv.Settle("j", b, st.Start) // another client's: changes nothing
	if got := srv.Unsettled(2000); len(got) != 1 {
		t.Fatalf("after settling another client's claim: %+v; want a's still due", got)
	}
	srv.Settle("j", a, st.Start)
	if got := srv.Unsettled(2000); len(got) != 0 {
		t.Fatalf("after Settle: %+v; want none", got)
	}

	srv, _ = newWith()
	srv.Changed("j", job.State{Phase: job.Ready}, false, 1500) // released by replication
	if got := srv.Unsettled(2000); len(got) != 0 {
		t.Fatalf("released claim: %+v; want none", got)
	}
	srv, _ = newWith()
	srv.Changed("j", job.State{Phase: job.Finished}, false, 1500)
	if got := srv.Unsettled(2000); len(got) != 0 {
		t.Fatalf("finished job: %+v; want none", got)
	}

	srv = NewServer[string](srvTClaim, DefaultTSkew)
	for i, k := range []string{"x", "y", "z"} {
		s := job.State{Phase: job.Ready}
		g := srv.Grant(k, true, s, a, false, int64(1000*(i+1)))
		p, err := srv.Confirm(k, s, a, grants(3), 3, anyNear, g.Start+int64(1000*(i+1)), srvTFinish, int64(1000*(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := srv.Applied(p, job.Merge(s, p.State), int64(1000*(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	got = srv.Unsettled(2500)
	if len(got) != 2 || got[0].Job != "x" || got[1].Job != "y" {
		t.Fatalf("Unsettled(2500) = %+v; want x then y", got)
	}
}

// TestServerAdopt: a claim held without a record (accepted before a
// restart) is adopted once, and is then due like an accepted one.
func TestServerAdopt(t *testing.T) {
	a := []byte("client-a")
	srv := NewServer[string](srvTClaim, DefaultTSkew)
	srv.Adopt("j", a, 1000, 1000+srvTFinish, 1500)
	srv.Adopt("j", a, 1000, 1000+srvTFinish, 9000) // again: kept as it was
	got := srv.Unsettled(2000)
	if len(got) != 1 || got[0].At != 1500 || got[0].Deadline != 1000+srvTFinish {
		t.Fatalf("Unsettled after Adopt: %+v; want one claim accepted at 1500", got)
	}
	if at, ok := srv.AcceptedAt("j", a, 1000); !ok || at != 1500 {
		t.Fatalf("AcceptedAt = %d, %v; want 1500", at, ok)
	}
}
