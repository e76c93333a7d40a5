package job

import (
	"math/rand/v2"
	"testing"
)

// TestLapseLaws: Lapse keeps the laws Expire has (valid, inflationary,
// idempotent, monotone, commutes with Merge), whatever T_finish and
// T_skew, and a state lapsed earlier lapses later as the original does.
func TestLapseLaws(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	var skewKept, released int
	for range propIters {
		a, b := randTimedState(r), randTimedState(r)
		now, later := r.Int64N(19), r.Int64N(19)
		if later < now {
			now, later = later, now
		}
		tf, skew := 1+r.Int64N(6), r.Int64N(4)
		la, lb := Lapse(a, now, tf, skew), Lapse(b, now, tf, skew)
		if err := la.Validate(); err != nil {
			t.Fatalf("Lapse(%+v, %d, %d, %d) = %+v is invalid: %v", a, now, tf, skew, la, err)
		}
		if Compare(la, a) < 0 {
			t.Fatalf("not inflationary: Lapse(%+v, %d) = %+v", a, now, la)
		}
		if !fieldsEqual(Lapse(la, now, tf, skew), la) {
			t.Fatalf("not idempotent: %+v at %d", a, now)
		}
		if !fieldsEqual(Lapse(la, later, tf, skew), Lapse(a, later, tf, skew)) {
			t.Fatalf("lapsing at %d then %d differs from at %d alone: %+v", now, later, later, a)
		}
		if Compare(a, b) <= 0 && Compare(la, lb) > 0 {
			t.Fatalf("not monotone at %d: %+v <= %+v but %+v > %+v", now, a, b, la, lb)
		}
		if x, y := Merge(la, lb), Lapse(Merge(a, b), now, tf, skew); !fieldsEqual(x, y) {
			t.Fatalf("at %d: Merge(Lapse(a), Lapse(b)) = %+v, Lapse(Merge(a, b)) = %+v\na=%+v\nb=%+v", now, x, y, a, b)
		}
		if a.Phase == Claimed {
			switch {
			case a.Deadline < a.Start+tf:
				released++
				if la.Phase != Ready {
					t.Fatalf("released claim %+v (T_finish %d) live at %d", a, tf, now)
				}
			case now >= a.Deadline && now < a.Deadline+skew:
				skewKept++
				if la.Phase != Claimed {
					t.Fatalf("claim %+v lapsed at %d, within T_skew %d of its deadline", a, now, skew)
				}
			}
		}
	}
	if skewKept == 0 || released == 0 {
		t.Fatalf("%d claims kept by T_skew, %d released: the ranges do not exercise Lapse", skewKept, released)
	}
}

// TestLapse: a confirmed claim (deadline Start + T_finish) lapses T_skew
// after its deadline on the judging node's clock; a released one at once.
func TestLapse(t *testing.T) {
	const tf, skew = 100, 20
	live := claimed("a", 10, 110)
	tests := []struct {
		name string
		s    State
		now  int64
		want State
	}{
		{"before the deadline", live, 109, live},
		{"at the deadline, within T_skew", live, 110, live},
		{"just within T_skew", live, 129, live},
		{"T_skew after the deadline", live, 130, tomb("a", 10)},
		{"released, before its old deadline", claimed("a", 10, 50), 0, tomb("a", 10)},
		{"a tombstone stays", tomb("a", 10), 0, tomb("a", 10)},
		{"finished stays", finished("a", 12, "r"), 500, finished("a", 12, "r")},
		{"ready stays", State{}, 500, State{}},
	}
	for _, tt := range tests {
		if got := Lapse(tt.s, tt.now, tf, skew); !fieldsEqual(got, tt.want) {
			t.Errorf("%s: Lapse(%+v, %d) = %+v, want %+v", tt.name, tt.s, tt.now, got, tt.want)
		}
	}
}

// TestJumpedTombstoneKeepsLiveClaim: a replica whose clock jumped an hour
// ahead sees a live claim lapsed and (running older code) sends its
// tombstone. An honest replica that holds the claim, judging on its own
// clock, keeps the claim until its own clock says the deadline plus T_skew
// has passed; a release by the client still ends it at once, and a
// tombstone of a claim it does not hold live is merged as before.
func TestJumpedTombstoneKeepsLiveClaim(t *testing.T) {
	const (
		tf   = int64(3600_000)
		skew = int64(600_000)
		now  = int64(1_000_000)
		hour = int64(3600_000)
	)
	live := claimed("a", now, now+tf)
	jumped := Lapse(live, now+10*60_000+hour, tf, skew) // 10 min in, clock +1 h
	if jumped.Phase != Ready {
		t.Fatalf("the jumped node sees %+v, want the claim lapsed", jumped)
	}
	released := claimed("a", now, now+60_000) // claim.Release at 1 min
	tests := []struct {
		name     string
		held, in State
		at       int64
		want     State // the view after Receive, Lapse at the receiver
	}{
		{"jumped tombstone, 10 min in", live, jumped, now + 10*60_000, live},
		{"jumped tombstone, at the deadline", live, jumped, now + tf, live},
		{"jumped tombstone, deadline plus T_skew passed here", live, jumped, now + tf + skew, tomb("a", now)},
		{"the client's release", live, released, now + 2*60_000, tomb("a", now)},
		{"tombstone of a claim not held", State{}, jumped, now + 60_000, jumped},
		{"tombstone of a later claim", claimed("b", now-1, now-1+tf), jumped, now + 60_000, jumped},
		{"the claim, unexpired, from the corrected node", live, live, now + 20*60_000, live},
	}
	for _, tt := range tests {
		got := Lapse(Receive(tt.held, tt.in, tt.at, tf, skew), tt.at, tf, skew)
		if !fieldsEqual(got, tt.want) {
			t.Errorf("%s: replica sees %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestReceiveLaws: Receive is the join except that it keeps out a
// tombstone of the held claim while that claim is live at the receiver;
// it never moves the receiver's view back.
func TestReceiveLaws(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	kept := 0
	for range propIters {
		held, in := randTimedState(r), randTimedState(r)
		now, tf, skew := r.Int64N(19), 1+r.Int64N(6), r.Int64N(4)
		got := Receive(held, in, now, tf, skew)
		liveTomb := in.IsTombstone() && held.Phase == Claimed && held.Start == in.Start &&
			string(held.Client) == string(in.Client) && Lapse(held, now, tf, skew).Phase == Claimed
		want := Merge(held, in)
		if liveTomb {
			want = held
			kept++
		}
		if !fieldsEqual(got, want) {
			t.Fatalf("Receive(%+v, %+v, %d) = %+v, want %+v", held, in, now, got, want)
		}
		if Compare(Lapse(got, now, tf, skew), Lapse(held, now, tf, skew)) < 0 {
			t.Fatalf("Receive moved the view back: %+v then %+v at %d", held, in, now)
		}
	}
	if kept == 0 {
		t.Fatal("no tombstone of a live claim drawn")
	}
}
