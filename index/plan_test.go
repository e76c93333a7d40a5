package index

import (
	"reflect"
	"slices"
	"testing"

	"github.com/up-pool/up/job"
)

// TestDesiredAndRuledOut: only a job's closest node lists it, a ready job
// under its keywords, a finished one under its project's finished keyword;
// RuledOut says which withdrawals the job's state calls for whoever lists
// it (a node that merely stopped being the closest withdraws for itself).
func TestDesiredAndRuledOut(t *testing.T) {
	listing := []string{"lhc", "sixtrack"}
	tests := []struct {
		phase   job.Phase
		closest bool
		want    []string
		ruled   map[string]bool // keyword → RuledOut
	}{
		{job.Ready, true, listing, map[string]bool{"lhc": false, "sixtrack": false, "lhc:finished": true}},
		{job.Ready, false, nil, map[string]bool{"lhc": false}},
		{job.TempClaimed, true, nil, map[string]bool{"lhc": true, "lhc:finished": true}},
		{job.Claimed, true, nil, map[string]bool{"lhc": true, "lhc:finished": true}},
		{job.Finished, true, []string{"lhc:finished"}, map[string]bool{"lhc": true, "lhc:finished": false}},
		{job.Finished, false, nil, map[string]bool{"lhc:finished": false}},
		{job.Collected, true, nil, map[string]bool{"lhc": true, "lhc:finished": true}},
	}
	for _, tc := range tests {
		st := job.State{Phase: tc.phase}
		if got := Desired(tc.closest, st, listing, "lhc"); !slices.Equal(got, tc.want) {
			t.Errorf("Desired(closest %v, %s) = %v, want %v", tc.closest, tc.phase, got, tc.want)
		}
		for kw, want := range tc.ruled {
			if got := RuledOut(st, kw, "lhc"); got != want {
				t.Errorf("RuledOut(%s, %q) = %v, want %v", tc.phase, kw, got, want)
			}
		}
	}
}

func TestReconcile(t *testing.T) {
	for _, tt := range []struct {
		name             string
		written, want    []string
		due, reset       bool
		withdraw, place  []string
		rewrite          []string
		reschedule, drop bool
	}{
		{name: "new job", want: []string{"a", "b"}, place: []string{"a", "b"}, reschedule: true},
		{name: "all written, not due", written: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "all written, due", written: []string{"a", "b"}, want: []string{"b", "a"}, due: true,
			rewrite: []string{"b", "a"}, reschedule: true},
		{name: "reset rewrites at once", written: []string{"a"}, want: []string{"a"}, reset: true, rewrite: []string{"a"}},
		{name: "one missing", written: []string{"a"}, want: []string{"a", "b"}, place: []string{"b"}},
		{name: "claimed: withdraw all", written: []string{"a", "b"}, withdraw: []string{"a", "b"}, reschedule: true, drop: true},
		{name: "finished: swap keywords", written: []string{"a", "b"}, want: []string{"lhc:finished"},
			withdraw: []string{"a", "b"}, place: []string{"lhc:finished"}, reschedule: true},
		{name: "nothing either way", reschedule: true, drop: true},
		{name: "due with one to withdraw", written: []string{"a", "x"}, want: []string{"a"}, due: true,
			withdraw: []string{"x"}, rewrite: []string{"a"}, reschedule: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Reconcile(tt.written, tt.want, tt.due, tt.reset)
			want := Reconciled{Withdraw: tt.withdraw, Place: tt.place, Rewrite: tt.rewrite, Reschedule: tt.reschedule, Forget: tt.drop}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Reconcile(%v, %v, due %v, reset %v) = %+v, want %+v", tt.written, tt.want, tt.due, tt.reset, got, want)
			}
		})
	}
}

// TestReconcileConverges: whatever is written, applying a reconcile (the
// withdrawals and placements succeed) leaves exactly what is wanted
// written, and a second reconcile, not due, does nothing.
func TestReconcileConverges(t *testing.T) {
	kws := []string{"a", "b", "c", "d"}
	for mask := range 1 << 8 {
		var written, want []string
		for i, kw := range kws {
			if mask&(1<<i) != 0 {
				written = append(written, kw)
			}
			if mask&(1<<(i+4)) != 0 {
				want = append(want, kw)
			}
		}
		r := Reconcile(written, want, false, false)
		after := map[string]bool{}
		for _, kw := range written {
			after[kw] = true
		}
		for _, kw := range r.Withdraw {
			delete(after, kw)
		}
		for _, kw := range r.Place {
			after[kw] = true
		}
		if len(after) != len(want) {
			t.Fatalf("written %v, want %v: after the reconcile %v", written, want, after)
		}
		var now []string
		for _, kw := range want {
			if !after[kw] {
				t.Fatalf("written %v, want %v: %q not written after the reconcile", written, want, kw)
			}
			now = append(now, kw)
		}
		if again := Reconcile(now, want, false, false); len(again.Withdraw)+len(again.Place)+len(again.Rewrite) != 0 {
			t.Fatalf("written %v, want %v: a second reconcile does %+v", written, want, again)
		}
	}
}

// TestWithTrickles: the trickle keyword is wanted only by the job's
// lister while it holds trickles, whatever the state; RuledOut never
// rules it out.
func TestWithTrickles(t *testing.T) {
	base := []string{"lhc"}
	for _, tc := range []struct {
		closest, trickles bool
		want              []string
	}{
		{true, true, []string{"lhc", "lhc:trickle"}},
		{true, false, base},
		{false, true, base},
	} {
		if got := WithTrickles(base, tc.closest, tc.trickles, "lhc"); !slices.Equal(got, tc.want) {
			t.Errorf("WithTrickles(closest %v, trickles %v) = %v, want %v", tc.closest, tc.trickles, got, tc.want)
		}
	}
	if len(base) != 1 {
		t.Error("WithTrickles changed its input")
	}
	for _, ph := range []job.Phase{job.Ready, job.Claimed, job.Finished, job.Collected} {
		if RuledOut(job.State{Phase: ph}, "lhc:trickle", "lhc") {
			t.Errorf("trickle keyword ruled out in %s", ph)
		}
	}
}
