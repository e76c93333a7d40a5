package claim

import (
	"bytes"
	"errors"
	"testing"

	"github.com/up-pool/up/job"
)

const (
	tNow    = int64(1_700_000_000_000)
	tClaim  = int64(5_000)
	tFinish = int64(3_600_000)
	tSkew   = int64(600_000)
)

var (
	clientA = bytes.Repeat([]byte{0xaa}, 32)
	clientB = bytes.Repeat([]byte{0xbb}, 32)
)

func claimedBy(client []byte, start, deadline int64) job.State {
	return job.State{Phase: job.Claimed, Client: client, Start: start, Deadline: deadline}
}

func sameTemp(a, b *Temp) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Client, b.Client) && a.Until == b.Until
}

// TestDecideOtherCopy: a node that holds another copy of the job's unit
// claimed or finished by the asking client denies it this one, saying
// why; a job already this client's, or not held, is answered as before.
func TestDecideOtherCopy(t *testing.T) {
	for _, c := range []struct {
		name string
		held bool
		st   job.State
		want Kind
	}{
		{"ready", true, job.State{}, Denied},
		{"claimed by the same client", true, claimedBy(clientA, tNow-100, tNow+tFinish), Granted},
		{"not held", false, job.State{}, DontCare},
	} {
		d := Decide(c.held, c.st, &Temp{clientA, tNow + 1}, clientA, true, tNow, tClaim)
		if d.Kind != c.want || d.Temp != nil {
			t.Errorf("%s: %v with temp %+v, want %v and no temp", c.name, d.Kind, d.Temp, c.want)
		}
		if c.want == Denied && d.Reason != ReasonOtherCopy {
			t.Errorf("%s: reason %q", c.name, d.Reason)
		}
	}
}

func TestDecide(t *testing.T) {
	finished := job.State{Phase: job.Finished, Client: clientA, At: tNow - 10, Result: []byte("r")}
	collected := job.State{Phase: job.Collected, At: tNow - 10}
	grantA := &Temp{Client: clientA, Until: tNow + tClaim}
	tests := []struct {
		name     string
		held     bool
		st       job.State
		temp     *Temp
		want     Kind
		wantTemp *Temp
	}{
		{"unknown job", false, job.State{}, nil, DontCare, nil},
		{"unknown job, whatever the state says", false, claimedBy(clientB, tNow-1, tNow+tFinish), &Temp{clientB, tNow + 1}, DontCare, nil},
		{"ready", true, job.State{}, nil, Granted, grantA},
		{"temp of another, not lapsed", true, job.State{}, &Temp{clientB, tNow + 1}, Denied, nil},
		{"temp of another, lapses now", true, job.State{}, &Temp{clientB, tNow}, Granted, grantA},
		{"temp of another, lapsed", true, job.State{}, &Temp{clientB, tNow - 1}, Granted, grantA},
		{"temp of the same client is renewed", true, job.State{}, &Temp{clientA, tNow + 1}, Granted, grantA},
		{"claimed by the same client", true, claimedBy(clientA, tNow-100, tNow+tFinish), nil, Granted, nil},
		{"claimed by the same client, temp of another", true, claimedBy(clientA, tNow-100, tNow+tFinish), &Temp{clientB, tNow + 1}, Granted, nil},
		{"claimed by another", true, claimedBy(clientB, tNow-100, tNow+tFinish), nil, Denied, nil},
		{"claimed by another, temp of the client", true, claimedBy(clientB, tNow-100, tNow+tFinish), &Temp{clientA, tNow + 1}, Denied, nil},
		{"claim of another expired by the caller", true, job.Expire(claimedBy(clientB, tNow-100, tNow), tNow), nil, Granted, grantA},
		{"finished", true, finished, nil, Denied, nil},
		{"finished by the same client", true, finished, &Temp{clientA, tNow + 1}, Denied, nil},
		{"collected", true, collected, nil, Denied, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.held, tt.st, tt.temp, clientA, false, tNow, tClaim)
			if d.Kind != tt.want {
				t.Fatalf("Kind = %v, want %v (reason %q)", d.Kind, tt.want, d.Reason)
			}
			if !sameTemp(d.Temp, tt.wantTemp) {
				t.Errorf("Temp = %+v, want %+v", d.Temp, tt.wantTemp)
			}
			if (d.Kind == Denied) != (d.Reason != "") {
				t.Errorf("Reason = %q for a %v", d.Reason, d.Kind)
			}
		})
	}
}

// confirmIn is one call of CheckConfirm; base() is a valid confirm.
type confirmIn struct {
	st      job.State
	temp    *Temp
	replies []Reply
	need    int
	near    func(string) bool
	start   int64
}

func base() confirmIn {
	return confirmIn{
		temp: &Temp{Client: clientA, Until: tNow + 1},
		replies: []Reply{
			{Node: "n0", Kind: Granted, At: tNow - 100},
			{Node: "n1", Kind: Granted, At: tNow - 50},
			{Node: "n2", Kind: DontCare, At: tNow - 20},
		},
		need:  2, // grants
		near:  func(n string) bool { return n == "n0" || n == "n1" || n == "n2" || n == "n3" },
		start: tNow,
	}
}

func (c confirmIn) run() (job.State, error) {
	return CheckConfirm(c.st, c.temp, clientA, c.replies, c.need, c.near, c.start, tFinish, tNow, tSkew)
}

func TestCheckConfirm(t *testing.T) {
	tests := []struct {
		name string
		edit func(*confirmIn)
		want error // nil: accepted
	}{
		{"valid", func(*confirmIn) {}, nil},
		// this node's temporary claim
		{"temp lapses in 1 ms", func(c *confirmIn) { c.temp.Until = tNow + 1 }, nil},
		{"no temp", func(c *confirmIn) { c.temp = nil }, ErrNoTempClaim},
		{"temp of another", func(c *confirmIn) { c.temp.Client = clientB }, ErrNoTempClaim},
		{"temp lapses now", func(c *confirmIn) { c.temp.Until = tNow }, ErrNoTempClaim},
		{"temp lapsed", func(c *confirmIn) { c.temp.Until = tNow - tClaim }, ErrNoTempClaim},
		// the job is still ready
		{"claimed by another", func(c *confirmIn) { c.st = claimedBy(clientB, tNow-10, tNow+tFinish) }, ErrBadConfirm},
		{"finished", func(c *confirmIn) {
			c.st = job.State{Phase: job.Finished, Client: clientA, At: tNow - 1, Result: []byte("r")}
		}, ErrBadConfirm},
		{"collected", func(c *confirmIn) { c.st = job.State{Phase: job.Collected, At: tNow - 1} }, ErrBadConfirm},
		// after the claim that ended last (its tombstone)
		{"after an older tombstone", func(c *confirmIn) { c.st = job.State{Client: clientB, Start: c.start - 1} }, nil},
		{"same start, greater client", func(c *confirmIn) { c.st = job.State{Client: []byte{0}, Start: c.start} }, nil},
		{"same start and client as the tombstone", func(c *confirmIn) { c.st = job.State{Client: clientA, Start: c.start} }, ErrBadConfirm},
		{"before the tombstone", func(c *confirmIn) { c.st = job.State{Client: clientB, Start: c.start + 1} }, ErrBadConfirm},
		// distinct nodes
		{"distinct nodes", func(c *confirmIn) { c.replies[2].Node = "n3" }, nil},
		{"duplicate node", func(c *confirmIn) { c.replies[2].Node = "n0" }, ErrBadConfirm},
		{"duplicate node, both granted", func(c *confirmIn) {
			c.replies = append(c.replies, c.replies[1])
		}, ErrBadConfirm},
		// a quorum of grants, whatever the others said: a deny among
		// them no longer refuses (all-or-abort refused any deny)
		{"a denied reply besides the quorum", func(c *confirmIn) { c.replies[2].Kind = Denied }, nil},
		{"a deny in place of a grant", func(c *confirmIn) { c.replies[0].Kind = Denied }, ErrBadConfirm},
		{"a don't-care in place of a grant", func(c *confirmIn) { c.replies[1].Kind = DontCare }, ErrBadConfirm},
		// other nodes' reply times are never compared with this clock
		// (no rule needs two clocks to agree): only this node's own
		// temporary claim, on its own clock, says the grant still stands
		{"reply 20 s ahead (a fast replica)", func(c *confirmIn) { c.replies[1].At = tNow + 20_000 }, nil},
		{"reply 3 min behind (a slow replica)", func(c *confirmIn) { c.replies[1].At = tNow - 180_000 }, nil},
		{"reply an hour off", func(c *confirmIn) { c.replies[0].At = tNow + 3_600_000 }, nil},
		// from nodes near the job
		{"a don't-care from a node not near", func(c *confirmIn) { c.replies[2].Node = "far" }, nil},
		{"a grant from a node not near: not counted", func(c *confirmIn) { c.replies[0].Node = "far" }, ErrBadConfirm},
		{"a grant from a node not near besides the quorum", func(c *confirmIn) {
			c.replies = append(c.replies, Reply{Node: "far", Kind: Granted, At: tNow})
		}, nil},
		{"no node near", func(c *confirmIn) { c.near = func(string) bool { return false } }, ErrBadConfirm},
		// at least need grants
		{"need fewer", func(c *confirmIn) { c.need = 1 }, nil},
		{"too few grants", func(c *confirmIn) { c.need = 3 }, ErrBadConfirm},
		{"the don't-care dropped", func(c *confirmIn) { c.replies = c.replies[:2] }, nil},
		{"too few after dropping a grant", func(c *confirmIn) { c.replies = c.replies[:1] }, ErrBadConfirm},
		{"no replies", func(c *confirmIn) { c.replies = nil }, ErrBadConfirm},
		{"no replies, need 0", func(c *confirmIn) { c.replies, c.need = nil, 0 }, ErrBadConfirm},
		// at least one grant
		{"one grant, need one", func(c *confirmIn) { c.replies[0].Kind, c.need = DontCare, 1 }, nil},
		{"zero grants", func(c *confirmIn) { c.replies[0].Kind, c.replies[1].Kind = DontCare, DontCare }, ErrBadConfirm},
		// start within T_skew of this node's clock (it orders the claim
		// in the replicated state; clocks may disagree by up to T_skew)
		{"start 20 s ahead", func(c *confirmIn) { c.start = tNow + 20_000 }, nil},
		{"start 3 min behind", func(c *confirmIn) { c.start = tNow - 180_000 }, nil},
		{"start T_skew before", func(c *confirmIn) { c.start = tNow - tSkew }, nil},
		{"start too early", func(c *confirmIn) { c.start = tNow - tSkew - 1 }, ErrBadConfirm},
		{"start T_skew after", func(c *confirmIn) { c.start = tNow + tSkew }, nil},
		{"start too late", func(c *confirmIn) { c.start = tNow + tSkew + 1 }, ErrBadConfirm},
		{"start zero", func(c *confirmIn) { c.start = 0 }, ErrBadConfirm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.edit(&c)
			got, err := c.run()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				want := claimedBy(clientA, c.start, c.start+tFinish)
				if !job.Equal(got, want) || got.Phase != job.Claimed {
					t.Fatalf("state = %+v, want %+v", got, want)
				}
				if err := got.Validate(); err != nil {
					t.Fatalf("claimed state invalid: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !job.Equal(got, job.State{}) {
				t.Errorf("refused confirm returned state %+v", got)
			}
		})
	}
}

func TestCheckConfirmIdempotent(t *testing.T) {
	prev := claimedBy(clientA, tNow-1000, tNow-1000+tFinish)
	// Confirmed before (the same start, or an older attempt's confirm
	// arriving late): the existing claim stands, whatever the confirm says
	// (the temp was dropped when the claim became permanent).
	for _, c := range []confirmIn{
		{st: prev, near: func(string) bool { return false }, start: prev.Start, need: 9},
		{st: prev, near: func(string) bool { return false }, start: prev.Start - 1, need: 9},
		func() confirmIn { c := base(); c.st, c.start = prev, prev.Start; return c }(),
	} {
		got, err := c.run()
		if err != nil || !job.Equal(got, prev) {
			t.Fatalf("re-confirm = %+v, %v; want %+v", got, err, prev)
		}
	}
	// Not once the client released it (its deadline moved to the release,
	// not lapsed yet): re-confirming would hand out a claim that ends at
	// once while the job goes to another client.
	for _, c := range []confirmIn{
		func() confirmIn { c := base(); c.st = claimedBy(clientA, tNow-1000, tNow+1); return c }(),
		func() confirmIn { c := base(); c.st, c.start = claimedBy(clientA, tNow, tNow+1), tNow; return c }(),
	} {
		if got, err := c.run(); !errors.Is(err, ErrBadConfirm) {
			t.Fatalf("re-confirm of a released claim = %+v, %v; want refused", got, err)
		}
	}
	// A later attempt of the same client (its earlier attempt's release
	// missed this node): a new claim, checked as one but for the temporary
	// claim, which a node holding the client's claim does not grant.
	c0 := base()
	c0.st, c0.temp = prev, nil
	if got, err := c0.run(); err != nil || !job.Equal(got, claimedBy(clientA, c0.start, c0.start+tFinish)) {
		t.Fatalf("later attempt of the same client = %+v, %v; want its new claim", got, err)
	}
	for name, edit := range map[string]func(*confirmIn){
		"too few grants": func(c *confirmIn) { c.need = 9 },
		"node not near":  func(c *confirmIn) { c.near = func(string) bool { return false } },
		"start too late": func(c *confirmIn) { c.start = tNow + tSkew + 1 },
	} {
		c := base()
		c.st, c.temp = prev, nil
		edit(&c)
		if got, err := c.run(); !errors.Is(err, ErrBadConfirm) {
			t.Fatalf("later attempt, %s = %+v, %v; want refused", name, got, err)
		}
	}
	// Only the claim's own client gets that.
	c := base()
	c.st = claimedBy(clientB, tNow-1000, tNow-1000+tFinish)
	if _, err := c.run(); !errors.Is(err, ErrBadConfirm) {
		t.Fatalf("confirm over another client's claim: %v", err)
	}
}

func TestCheckConfirmDoesNotModifyInputs(t *testing.T) {
	c := base()
	replies := append([]Reply(nil), c.replies...)
	temp := *c.temp
	if _, err := c.run(); err != nil {
		t.Fatal(err)
	}
	for i := range replies {
		if replies[i] != c.replies[i] {
			t.Fatalf("reply %d changed", i)
		}
	}
	if !sameTemp(&temp, c.temp) {
		t.Fatal("temp changed")
	}
}

func TestRelease(t *testing.T) {
	start := tNow - 1000
	st := claimedBy(clientA, start, start+tFinish)
	rel, ok := Release(st, clientA, tNow)
	if !ok {
		t.Fatal("the claiming client cannot release its claim")
	}
	want := claimedBy(clientA, start, tNow)
	if !job.Equal(rel, want) {
		t.Fatalf("released state %+v, want %+v", rel, want)
	}
	if st.Deadline != start+tFinish {
		t.Fatal("Release modified its argument")
	}
	if err := rel.Validate(); err != nil {
		t.Fatalf("released state invalid: %v", err)
	}
	if m := job.Merge(st, rel); !job.Equal(m, rel) {
		t.Errorf("Merge(claim, release) = %+v, want the release", m)
	}
	if m := job.Merge(rel, st); !job.Equal(m, rel) {
		t.Errorf("Merge(release, claim) = %+v, want the release", m)
	}
	if e := job.Expire(rel, tNow); e.Phase != job.Ready {
		t.Errorf("released claim does not lapse at once: %+v", e)
	}
	if e := job.Expire(st, tNow); e.Phase != job.Claimed {
		t.Fatalf("the original claim lapsed by itself: %+v", e)
	}

	// Only the claiming client's claim is released.
	for _, tc := range []struct {
		name   string
		st     job.State
		client []byte
	}{
		{"another client", st, clientB},
		{"nil client", st, nil},
		{"ready", job.State{}, clientA},
		{"finished", job.State{Phase: job.Finished, Client: clientA, At: tNow - 5, Result: []byte("r")}, clientA},
		{"collected", job.State{Phase: job.Collected, At: tNow - 5}, clientA},
	} {
		got, ok := Release(tc.st, tc.client, tNow)
		if ok || !job.Equal(got, tc.st) {
			t.Errorf("%s: Release = %+v, %v; want the state unchanged, false", tc.name, got, ok)
		}
	}
}

func TestReleaseAtStart(t *testing.T) {
	// Released in the claim's first millisecond: the deadline cannot reach
	// the start (the state would be invalid), so it lapses 1 ms later.
	st := claimedBy(clientA, tNow, tNow+tFinish)
	rel, ok := Release(st, clientA, tNow)
	if !ok || rel.Deadline != tNow+1 {
		t.Fatalf("Release = %+v, %v; want deadline start+1", rel, ok)
	}
	if err := rel.Validate(); err != nil {
		t.Fatal(err)
	}
	if !job.Equal(job.Merge(st, rel), rel) {
		t.Error("release loses the merge")
	}
	if e := job.Expire(rel, tNow+1); e.Phase != job.Ready {
		t.Errorf("released claim still %v 1 ms after its start", e.Phase)
	}
}

// TestReleasePastDeadline: a claim past its deadline on this node's clock
// but still live here (within T_skew) is released with its deadline moved
// just before the old one, so the release wins the merge and lapses at
// once; moved to now, it would lose to the claim, which lived on (a node
// whose clock ran ahead of its client's kept denying the job).
func TestReleasePastDeadline(t *testing.T) {
	start := tNow - tFinish - 60_000 // the deadline passed a minute ago
	st := claimedBy(clientA, start, start+tFinish)
	if job.Lapse(st, tNow, tFinish, DefaultTSkew).Phase != job.Claimed {
		t.Fatal("the claim should still be live here within T_skew")
	}
	rel, ok := Release(st, clientA, tNow)
	if !ok || rel.Deadline != st.Deadline-1 {
		t.Fatalf("Release = %+v, %v; want the deadline moved 1 ms earlier", rel, ok)
	}
	if !job.Equal(job.Merge(st, rel), rel) {
		t.Error("release loses the merge")
	}
	if v := job.Lapse(job.Merge(st, rel), tNow, tFinish, DefaultTSkew); v.Phase != job.Ready {
		t.Errorf("released claim still %v here", v.Phase)
	}
}

func TestFrees(t *testing.T) {
	for _, c := range []struct {
		name string
		held bool
		st   job.State
		want bool
	}{
		{"ready", true, job.State{Phase: job.Ready}, true},
		{"ready after a released claim", true, job.State{Phase: job.Ready, Client: []byte("a"), Start: 5}, true},
		{"claimed by a confirm", true, job.State{Phase: job.Claimed, Client: []byte("a"), Deadline: 9}, false},
		{"finished", true, job.State{Phase: job.Finished}, false},
		{"collected", true, job.State{Phase: job.Collected}, false},
		{"not held", false, job.State{}, false},
	} {
		if got := Frees(c.held, c.st); got != c.want {
			t.Errorf("%s: Frees = %v, want %v", c.name, got, c.want)
		}
	}
}
