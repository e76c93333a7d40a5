package claim

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/job"
)

const (
	srvTClaim  = 15_000
	srvTFinish = 3_600_000
)

var anyNear = func(string) bool { return true }

func grants(n int) []Reply {
	out := make([]Reply, n)
	for i := range out {
		out[i] = Reply{Node: string(rune('a' + i)), Kind: Granted}
	}
	return out
}

// claimOn runs one whole claim of client on srv's job "j" in state *st at
// now: grant, confirm, merge, Applied; it returns Applied's error.
func claimOn(t *testing.T, srv *Server[string], st *job.State, client []byte, now int64) error {
	t.Helper()
	g := srv.Grant("j", true, *st, client, false, now)
	if g.Kind != Granted {
		return errors.New("denied: " + g.Reason)
	}
	p, err := srv.Confirm("j", *st, client, grants(3), 3, anyNear, max(now, g.Start+1), srvTFinish, now)
	if err != nil {
		return err
	}
	*st = job.Merge(*st, p.State)
	_, _, err = srv.Applied(p, *st, now)
	return err
}

func TestServerGrantAndConfirm(t *testing.T) {
	a, b := []byte("client-a"), []byte("client-b")
	srv := NewServer[string](srvTClaim, DefaultTSkew)
	ready := job.State{Phase: job.Ready}

	if g := srv.Grant("j", false, job.State{}, a, false, 1000); g.Kind != DontCare || srv.Temps() != 0 {
		t.Fatalf("job not held: %v, %d temps; want don't care and none", g.Kind, srv.Temps())
	}
	g := srv.Grant("j", true, ready, a, false, 1000)
	if g.Kind != Granted || g.Temp == nil || g.Temp.Until != 1000+srvTClaim {
		t.Fatalf("first request: %+v; want a grant with a temporary claim until %d", g, 1000+srvTClaim)
	}
	if g := srv.Grant("j", true, ready, b, false, 2000); g.Kind != Denied || !g.Busy {
		t.Fatalf("second client while the first's temporary claim stands: %+v; want a busy denial", g)
	}
	if _, err := srv.Confirm("j", ready, b, grants(3), 3, anyNear, 2000, srvTFinish, 2000); !errors.Is(err, ErrNoTempClaim) {
		t.Fatalf("confirm without a temporary claim: %v; want ErrNoTempClaim", err)
	}
	p, err := srv.Confirm("j", ready, a, grants(3), 3, anyNear, 1500, srvTFinish, 2000)
	if err != nil {
		t.Fatal(err)
	}
	merged := job.Merge(ready, p.State)
	if _, _, err := srv.Applied(p, merged, 2000); err != nil {
		t.Fatalf("applied: %v", err)
	}
	if srv.Temps() != 0 {
		t.Fatal("temporary claim kept after its confirm")
	}
	log := srv.Log()
	if len(log) != 1 || log[0].Job != "j" || !bytes.Equal(log[0].Client, a) || log[0].Start != 1500 || log[0].At != 2000 {
		t.Fatalf("log %+v; want one record of client a from 1500 accepted at 2000", log)
	}
	if at, ok := srv.AcceptedAt("j", a, 1500); !ok || at != 2000 {
		t.Fatalf("AcceptedAt = %d, %v; want 2000", at, ok)
	}
	if g := srv.Grant("j", true, merged, b, false, 3000); g.Kind != Denied || g.Busy {
		t.Fatalf("request for a claimed job: %+v; want a plain denial", g)
	}
}

func TestServerGrantNamesEndedStart(t *testing.T) {
	srv := NewServer[string](srvTClaim, DefaultTSkew)
	tomb := job.State{Phase: job.Ready, Client: []byte("old"), Start: 777}
	if g := srv.Grant("j", true, tomb, []byte("new"), false, 1000); g.Kind != Granted || g.Start != 777 {
		t.Fatalf("grant after an ended claim: %+v; want Start 777", g)
	}
}

func TestServerAppliedRefusals(t *testing.T) {
	a := []byte("client-a")
	ready := job.State{Phase: job.Ready}
	for _, tc := range []struct {
		name    string
		between func(srv *Server[string]) // between Confirm and Applied
		merged  func(claimed job.State) job.State
		want    error
		release bool
	}{
		{"a result merged first", nil, func(job.State) job.State { return job.State{Phase: job.Finished} }, ErrReleased, false},
		{"released meanwhile", func(srv *Server[string]) { srv.EndTemp("j", a) },
			func(c job.State) job.State { return c }, ErrReleasedMeanwhile, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer[string](srvTClaim, DefaultTSkew)
			srv.Grant("j", true, ready, a, false, 1000)
			p, err := srv.Confirm("j", ready, a, grants(3), 3, anyNear, 1000, srvTFinish, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if tc.between != nil {
				tc.between(srv)
			}
			rel, release, err := srv.Applied(p, tc.merged(p.State), 1100)
			if !errors.Is(err, tc.want) || release != tc.release {
				t.Fatalf("Applied = release %v, %v; want release %v, %v", release, err, tc.release, tc.want)
			}
			if release && (rel.Phase != job.Claimed || rel.Deadline != 1100 || job.Merge(p.State, rel).Deadline != 1100) {
				t.Fatalf("release %+v does not end the claim at 1100", rel)
			}
			if len(srv.Log()) != 0 {
				t.Fatal("a refused confirm was logged")
			}
		})
	}
}

func TestServerLapse(t *testing.T) {
	a, b := []byte("client-a"), []byte("client-b")
	ready := job.State{Phase: job.Ready}
	srv := NewServer[string](srvTClaim, DefaultTSkew)
	first := srv.Grant("j", true, ready, a, false, 1000).Temp
	if srv.Lapse("j", first, 1000+srvTClaim-1) {
		t.Fatal("lapsed before its end")
	}
	if !srv.Lapse("j", first, 1000+srvTClaim) || srv.Temps() != 0 {
		t.Fatal("an unconfirmed temporary claim did not lapse at its end")
	}
	second := srv.Grant("j", true, ready, b, false, 20_000).Temp
	if srv.Lapse("j", first, 40_000) || srv.Temps() != 1 {
		t.Fatal("the first claim's lapse check dropped the second client's claim")
	}
	if !srv.Lapse("j", second, 40_000) {
		t.Fatal("second claim did not lapse")
	}
	if srv.EndTemp("j", a) {
		t.Fatal("EndTemp ended a claim that is gone")
	}
}

func TestServerChanged(t *testing.T) {
	a := []byte("client-a")
	srv := NewServer[string](srvTClaim, DefaultTSkew)
	st := job.State{Phase: job.Ready}
	if err := claimOn(t, srv, &st, a, 1000); err != nil {
		t.Fatal(err)
	}
	srv.Changed("j", job.State{Phase: job.Ready, Client: a, Start: 1000}, false, 5000)
	if l := srv.Log(); len(l) != 1 || !l[0].Released {
		t.Fatalf("ready again before the deadline: %+v; want the claim released", l)
	}

	srv = NewServer[string](srvTClaim, DefaultTSkew)
	st = job.State{Phase: job.Ready}
	if err := claimOn(t, srv, &st, a, 1000); err != nil {
		t.Fatal(err)
	}
	srv.Changed("j", job.State{Phase: job.Finished}, false, 5000)
	srv.Changed("j", job.State{Phase: job.Ready}, false, 6000)
	if l := srv.Log(); len(l) != 1 || l[0].Released {
		t.Fatalf("finished job's claim: %+v; want it past releasing", l)
	}
	srv.Changed("j", job.State{}, true, 7000)
	if l := srv.Log(); len(l) != 0 {
		t.Fatalf("deleted job's log: %+v; want none", l)
	}
}

func TestServerSweep(t *testing.T) {
	srv := NewServer[int](srvTClaim, DefaultTSkew)
	ready := job.State{Phase: job.Ready}
	for i := range maxTemps {
		srv.Grant(i, true, ready, []byte("c"), false, 0)
	}
	srv.Grant(-1, true, ready, []byte("c"), false, srvTClaim)
	if srv.Temps() != 1 {
		t.Fatalf("%d temporary claims after the sweep; want only the live one", srv.Temps())
	}
}

// TestServerLogOrdered: whatever clients ask, confirm, release and lapse
// in whatever order, one node's log of one job has non-decreasing starts,
// strictly increasing between different clients: the node never accepts
// a claim that would not order after the one it holds (a merge would drop
// it silently, or two clients would hold the job at once). Either of two
// checks keeps it: CheckConfirm's start ordering and Applied's post-merge
// check; with both removed the test fails.
func TestServerLogOrdered(t *testing.T) {
	clients := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	logged := 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		srv := NewServer[string](srvTClaim, DefaultTSkew)
		st := job.State{Phase: job.Ready}
		temps := map[string]*Temp{}
		now := int64(1_000_000)
		for range 60 {
			now += rng.Int64N(20_000)
			st = job.Expire(st, now)
			c := clients[rng.IntN(len(clients))]
			switch rng.IntN(4) {
			case 0:
				if g := srv.Grant("j", true, st, c, false, now); g.Temp != nil {
					temps[string(c)] = g.Temp
				}
			case 1:
				start := now + rng.Int64N(2*DefaultTSkew) - DefaultTSkew
				if p, err := srv.Confirm("j", st, c, grants(3), 3, anyNear, start, srvTFinish, now); err == nil {
					st = job.Merge(st, p.State)
					if rel, ok, _ := srv.Applied(p, st, now); ok {
						st = job.Merge(st, rel)
					}
				}
			case 2:
				srv.EndTemp("j", c)
				if rel, ok := Release(st, c, now); ok {
					st = job.Merge(st, rel)
					srv.MarkReleased("j", func(r Record) bool { return bytes.Equal(r.Client, c) })
				}
			case 3:
				if t := temps[string(c)]; t != nil {
					srv.Lapse("j", t, now)
				}
			}
		}
		log := srv.Log()
		logged += len(log)
		for i := 1; i < len(log); i++ {
			prev, cur := log[i-1], log[i]
			if cur.Start < prev.Start || (cur.Start == prev.Start && !bytes.Equal(cur.Client, prev.Client)) {
				t.Fatalf("seed %d: record %d (%s from %d) does not order after %s from %d", seed, i, cur.Client, cur.Start, prev.Client, prev.Start)
			}
		}
	}
	if logged < 200 {
		t.Fatalf("only %d claims logged over 200 runs: the property was hardly exercised", logged)
	}
}
