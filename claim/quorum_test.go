package claim

import (
	"fmt"
	"slices"
	"testing"
)

// TestDriverToleratesAFaultyReplica: of a job's five replicas one is
// faulty — it denies every claim, never answers, or refuses every confirm —
// and the claim is still won with a quorum of four (all-or-abort lost it).
func TestDriverToleratesAFaultyReplica(t *testing.T) {
	for bad := range 5 {
		for _, fault := range []string{"denies", "silent", "refuses confirms"} {
			t.Run(fmt.Sprintf("n%d %s", bad, fault), func(t *testing.T) {
				d := NewDriver(nodeList(8), 5)
				answers := map[string]answer{"n5": dontCare}
				for i := range 5 {
					answers[fmt.Sprint("n", i)] = grant
				}
				asked := nodeList(5)
				switch fault {
				case "denies":
					answers[fmt.Sprint("n", bad)] = deny
				case "silent":
					answers[fmt.Sprint("n", bad)] = silent
					asked = nodeList(6) // the next nearest stands in
				}
				act := script(t, d, asked, answers)
				var want []string // the first four grants
				for i := range 5 {
					if (fault == "refuses confirms" || i != bad) && len(want) < 4 {
						want = append(want, fmt.Sprint("n", i))
					}
				}
				if act.Done != Pending || !slices.Equal(act.Confirm, want) {
					t.Fatalf("action %+v, want Confirm to %v", act, want)
				}
				act = confirmAll(d, act, func(n string) bool { return fault != "refuses confirms" || n != fmt.Sprint("n", bad) })
				if act.Done != Won || len(act.Release) > 0 {
					t.Fatalf("outcome %+v, want Won", act)
				}
			})
		}
	}
}

// TestDriverBeyondF documents what happens past f = 1 at r = 5: two
// deniers leave three grants, short of the quorum of four: the attempt is
// lost and its grants released (the job is unclaimable while both stay
// among its closest); two refused confirms fail it the same way, the
// spare's acceptance notwithstanding.
func TestDriverBeyondF(t *testing.T) {
	d := NewDriver(nodeList(8), 5)
	act := script(t, d, []string{"n0", "n1", "n2"}, map[string]answer{"n0": grant, "n1": deny, "n2": deny})
	if act.Done != Lost || !slices.Equal(act.Release, []string{"n0"}) {
		t.Fatalf("two deniers: %+v, want Lost releasing n0", act)
	}
	d = NewDriver(nodeList(8), 5)
	act = script(t, d, nodeList(5), map[string]answer{"n0": grant, "n1": grant, "n2": grant, "n3": grant, "n4": grant})
	act = confirmAll(d, act, func(n string) bool { return n != "n0" && n != "n1" })
	if act.Done != Failed || !slices.Equal(act.Release, nodeList(5)) {
		t.Fatalf("two refused confirms: %+v, want Failed releasing all", act)
	}
}

func TestQuorum(t *testing.T) {
	for _, c := range []struct{ r, f, q int }{
		{0, 0, 1}, {1, 0, 1}, {2, 0, 2}, {3, 0, 2}, {4, 1, 3}, {5, 1, 4}, {6, 1, 4}, {7, 2, 5}, {10, 3, 7},
	} {
		if f, q := Faults(c.r), Quorum(c.r); f != c.f || q != c.q {
			t.Errorf("r=%d: f=%d q=%d, want f=%d q=%d", c.r, f, q, c.f, c.q)
		}
	}
	for r := 1; r <= 40; r++ {
		f, q := Faults(r), Quorum(r)
		if 2*q-r <= f || q > r-f {
			t.Errorf("r=%d f=%d q=%d: two quorums share %d (must exceed f), f faulty leave %d (must reach q)", r, f, q, 2*q-r, r-f)
		}
	}
}
