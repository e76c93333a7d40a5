package claim

import (
	"fmt"
	"slices"
	"testing"
)

func nodeList(n int) []string {
	ns := make([]string, n)
	for i := range ns {
		ns[i] = fmt.Sprintf("n%d", i)
	}
	return ns
}

// answer is a scripted reply: ok false means the node did not answer.
type answer struct {
	ok   bool
	kind Kind
}

var (
	grant    = answer{true, Granted}
	deny     = answer{true, Denied}
	dontCare = answer{true, DontCare}
	silent   = answer{}
)

// script drives d through its asking phase: each Ask must be for the next
// node in want (the order the driver must ask in), answered as script says.
// It returns the first action that is not an Ask — the confirm, when a
// spare was asked beside it (its Ask then answered here too).
func script(t *testing.T, d *Driver, want []string, answers map[string]answer) Action {
	t.Helper()
	act := d.Next()
	asked := []string{}
	var confirm *Action
	for act.Ask != "" {
		asked = append(asked, act.Ask)
		a, ok := answers[act.Ask]
		if !ok {
			t.Fatalf("asked %s, which has no scripted answer (asked %v)", act.Ask, asked)
		}
		if act.Done != Pending || len(act.Release) > 0 || (len(act.Confirm) > 0 && confirm != nil) {
			t.Fatalf("ask action carries more: %+v", act)
		}
		if len(act.Confirm) > 0 {
			c := act
			c.Ask = ""
			confirm = &c
		}
		act = d.Answer(act.Ask, a.ok, a.kind, []byte("signed by "+act.Ask))
	}
	if !slices.Equal(asked, want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	if confirm != nil {
		if act.Done != Pending || len(act.Confirm) > 0 || len(act.Release) > 0 {
			t.Fatalf("a spare's answer before any confirm result gave %+v", act)
		}
		return *confirm
	}
	return act
}

// confirmAll answers the confirms act asks for (accepted when ok says so),
// then those to spares that follow, and returns the first action that
// asks for no confirm.
func confirmAll(d *Driver, act Action, ok func(node string) bool) Action {
	for len(act.Confirm) > 0 {
		next := Action{}
		for _, n := range act.Confirm {
			if a := d.Confirmed(n, ok(n)); a.Done != Pending || len(a.Confirm) > 0 || len(a.Release) > 0 {
				next = a
			}
		}
		act = next
	}
	return act
}

// TestDriverAllGrant: four grants in turn, then the confirm to them and
// the fifth ask (the spare) at once; the spare is not asked to confirm
// when the four accept.
func TestDriverAllGrant(t *testing.T) {
	d := NewDriver(nodeList(7), 5)
	want := nodeList(5)
	act := script(t, d, want, map[string]answer{"n0": grant, "n1": grant, "n2": grant, "n3": grant, "n4": grant})
	if !slices.Equal(act.Confirm, want[:4]) || act.Done != Pending || len(act.Release) > 0 {
		t.Fatalf("action %+v, want Confirm to %v", act, want[:4])
	}
	rs := d.Replies()
	if len(rs) != 5 {
		t.Fatalf("%d replies gathered, want 5", len(rs))
	}
	for i, r := range rs {
		if r.Node != want[i] || r.Kind != Granted || string(r.Bytes) != "signed by "+want[i] {
			t.Errorf("reply %d = %+v", i, r)
		}
	}
	if a := d.Next(); a.Ask != "" || len(a.Confirm) > 0 || a.Done != Pending {
		t.Fatalf("Next while confirming = %+v, want nothing", a)
	}
	for i, n := range want[:4] {
		a := d.Confirmed(n, true)
		if i < 3 {
			if a.Done != Pending || a.Ask != "" || len(a.Release) > 0 || len(a.Confirm) > 0 {
				t.Fatalf("after %d confirms: %+v", i+1, a)
			}
			continue
		}
		if a.Done != Won || len(a.Release) > 0 {
			t.Fatalf("after all confirms: %+v, want Won", a)
		}
	}
	if a := d.Next(); a.Done != Won || a.Ask != "" || len(a.Release) > 0 {
		t.Fatalf("Next after winning = %+v", a)
	}
}

// TestDriverWaitsForTheSpare: the confirms may all be answered before the
// spare: the attempt ends only with the spare's answer in (so a spare that
// granted learns the claim from the certificate), and a silent spare is
// stood in for by the next node.
func TestDriverWaitsForTheSpare(t *testing.T) {
	d := NewDriver(nodeList(7), 5)
	act := d.Next()
	for _, n := range nodeList(4) {
		if act.Ask != n {
			t.Fatalf("asked %q, want %s", act.Ask, n)
		}
		act = d.Answer(n, true, Granted, nil)
	}
	if act.Ask != "n4" || !slices.Equal(act.Confirm, nodeList(4)) {
		t.Fatalf("action %+v, want the confirm to n0..n3 beside the ask of n4", act)
	}
	for _, n := range nodeList(3) {
		if a := d.Confirmed(n, true); a.Done != Pending || a.Ask != "" {
			t.Fatalf("confirmed by %s with the spare out: %+v", n, a)
		}
	}
	if a := d.Answer("n4", false, 0, nil); a.Ask != "n5" || a.Done != Pending {
		t.Fatalf("silent spare, no quorum accepted yet: %+v, want the ask of n5", a)
	}
	if a := d.Confirmed("n3", true); a.Done != Pending || a.Ask != "" {
		t.Fatalf("a quorum accepted with the spare out: %+v, want to wait", a)
	}
	if a := d.Answer("n5", true, Granted, nil); a.Done != Won || len(a.Confirm) > 0 || len(a.Release) > 0 {
		t.Fatalf("spare answered after a quorum accepted: %+v, want Won", a)
	}
	// A silent spare and a don't-care stand-in: the four confirms win.
	d = NewDriver(nodeList(7), 5)
	act = script(t, d, nodeList(6), map[string]answer{"n0": grant, "n1": grant, "n2": grant, "n3": grant, "n4": silent, "n5": dontCare})
	if act = confirmAll(d, act, func(string) bool { return true }); act.Done != Won {
		t.Fatalf("outcome %+v, want Won", act)
	}
}

func TestDriverDontCareAccepted(t *testing.T) {
	d := NewDriver(nodeList(7), 5)
	act := script(t, d, nodeList(5), map[string]answer{"n0": grant, "n1": grant, "n2": dontCare, "n3": grant, "n4": grant})
	wantConfirm := []string{"n0", "n1", "n3", "n4"}
	if !slices.Equal(act.Confirm, wantConfirm) {
		t.Fatalf("Confirm = %v, want %v", act.Confirm, wantConfirm)
	}
	// The confirm carries every reply, the don't-care too.
	if rs := d.Replies(); len(rs) != 5 || rs[2].Node != "n2" || rs[2].Kind != DontCare {
		t.Fatalf("replies = %+v", rs)
	}
	for _, n := range wantConfirm {
		act = d.Confirmed(n, true)
	}
	if act.Done != Won {
		t.Fatalf("outcome %v, want won", act.Done)
	}
	// A don't-care node is not asked to confirm: a confirm from it is ignored.
	if a := d.Confirmed("n2", false); a.Done != Won || len(a.Release) > 0 {
		t.Fatalf("stray confirm result changed the outcome: %+v", a)
	}
}

func TestDriverDenied(t *testing.T) {
	tests := []struct {
		name        string
		answers     map[string]answer
		asked       []string
		wantRelease []string
	}{
		// A quorum of 4 of 5 tolerates one deny (f = 1); the second makes
		// a quorum impossible (all-or-abort gave up on the first).
		{"first two deny", map[string]answer{"n0": deny, "n1": deny}, []string{"n0", "n1"}, nil},
		{"two denies after two grants", map[string]answer{"n0": grant, "n1": grant, "n2": deny, "n3": deny},
			[]string{"n0", "n1", "n2", "n3"}, []string{"n0", "n1"}},
		{"deny, grant, don't-care, deny", map[string]answer{"n0": deny, "n1": grant, "n2": dontCare, "n3": grant, "n4": deny},
			nodeList(5), []string{"n1", "n3"}},
		{"two denies after a silent node", map[string]answer{"n0": silent, "n1": grant, "n2": deny, "n3": deny},
			[]string{"n0", "n1", "n2", "n3"}, []string{"n1"}},
		{"last of r denies after a don't-care", map[string]answer{"n0": grant, "n1": grant, "n2": dontCare, "n3": grant, "n4": deny},
			nodeList(5), []string{"n0", "n1", "n3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDriver(nodeList(7), 5)
			act := script(t, d, tt.asked, tt.answers)
			if act.Done != Lost || len(act.Confirm) > 0 || !slices.Equal(act.Release, tt.wantRelease) {
				t.Fatalf("action %+v, want Lost with Release %v", act, tt.wantRelease)
			}
			// Over: no more asks, no second release, later answers ignored.
			for _, a := range []Action{d.Next(), d.Answer("n5", true, Granted, nil), d.Confirmed("n0", true)} {
				if a.Done != Lost || a.Ask != "" || len(a.Release) > 0 || len(a.Confirm) > 0 {
					t.Fatalf("after losing: %+v", a)
				}
			}
		})
	}
}

func TestDriverSkipsSilentNodes(t *testing.T) {
	d := NewDriver(nodeList(8), 5)
	act := script(t, d, []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6"}, map[string]answer{
		"n0": grant, "n1": silent, "n2": grant, "n3": silent, "n4": dontCare, "n5": grant, "n6": grant,
	})
	want := []string{"n0", "n2", "n5", "n6"}
	if !slices.Equal(act.Confirm, want) {
		t.Fatalf("Confirm = %v, want %v (n7 is not needed)", act.Confirm, want)
	}
	if len(d.Replies()) != 5 {
		t.Fatalf("%d replies, want 5", len(d.Replies()))
	}
}

func TestDriverRunsOut(t *testing.T) {
	tests := []struct {
		name        string
		nodes       int
		answers     map[string]answer
		wantConfirm []string
		wantDone    Outcome
		wantRelease []string
	}{
		{"fewer nodes than r, all grant", 3, map[string]answer{"n0": grant, "n1": grant, "n2": grant}, nodeList(2), Pending, nil},
		// One grant is short of a quorum (all-or-abort confirmed it).
		{"one grant among silent nodes", 7, map[string]answer{
			"n0": silent, "n1": silent, "n2": grant, "n3": silent, "n4": silent, "n5": silent, "n6": silent,
		}, nil, Failed, []string{"n2"}},
		{"one grant, rest don't care", 4, map[string]answer{"n0": dontCare, "n1": dontCare, "n2": grant, "n3": silent}, nil, Failed, []string{"n2"}},
		{"three of four grant", 4, map[string]answer{"n0": grant, "n1": silent, "n2": grant, "n3": grant}, []string{"n0", "n2", "n3"}, Pending, nil},
		{"nobody holds the job", 4, map[string]answer{"n0": dontCare, "n1": silent, "n2": dontCare, "n3": dontCare}, nil, Unknown, nil},
		{"nobody answered", 4, map[string]answer{"n0": silent, "n1": silent, "n2": silent, "n3": silent}, nil, Failed, nil},
		{"no nodes", 0, map[string]answer{}, nil, Failed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDriver(nodeList(tt.nodes), 5)
			act := script(t, d, nodeList(tt.nodes), tt.answers)
			if !slices.Equal(act.Confirm, tt.wantConfirm) || act.Done != tt.wantDone || !slices.Equal(act.Release, tt.wantRelease) {
				t.Fatalf("action %+v, want Confirm %v, Done %v, Release %v", act, tt.wantConfirm, tt.wantDone, tt.wantRelease)
			}
			if tt.wantDone != Pending {
				if a := d.Next(); a.Done != tt.wantDone || a.Ask != "" {
					t.Fatalf("Next after the end = %+v", a)
				}
			}
		})
	}
}

func TestDriverAllDontCareStopsAtR(t *testing.T) {
	d := NewDriver(nodeList(7), 5)
	act := script(t, d, nodeList(5), map[string]answer{
		"n0": dontCare, "n1": dontCare, "n2": dontCare, "n3": dontCare, "n4": dontCare,
	})
	if act.Done != Unknown || len(act.Release) > 0 || len(act.Confirm) > 0 {
		t.Fatalf("action %+v, want Unknown", act)
	}
}

// TestDriverRefusedConfirm: at r = 4 (q = 3) the confirm goes to the
// first three and the fourth is asked beside it; one refused confirm is
// made up by the spare's, two fail the attempt and release every grant.
func TestDriverRefusedConfirm(t *testing.T) {
	for _, tt := range []struct {
		refuse []string
		want   Outcome
	}{
		{nil, Won}, {[]string{"n0"}, Won}, {[]string{"n2"}, Won}, {[]string{"n3"}, Won},
		{[]string{"n1", "n3"}, Failed}, {[]string{"n0", "n1"}, Failed}, {[]string{"n0", "n2", "n3"}, Failed},
	} {
		t.Run(fmt.Sprint("refused by ", tt.refuse), func(t *testing.T) {
			d := NewDriver(nodeList(6), 4)
			act := script(t, d, nodeList(4), map[string]answer{"n0": grant, "n1": grant, "n2": grant, "n3": grant})
			if !slices.Equal(act.Confirm, nodeList(3)) {
				t.Fatalf("action %+v, want Confirm to n0..n2", act)
			}
			act = confirmAll(d, act, func(n string) bool { return !slices.Contains(tt.refuse, n) })
			if act.Done != tt.want {
				t.Fatalf("action %+v, want %v", act, tt.want)
			}
			if tt.want == Failed && !slices.Equal(act.Release, nodeList(4)) {
				t.Fatalf("action %+v, want Release of every grant", act)
			}
			if a := d.Next(); a.Done != tt.want || len(a.Release) > 0 {
				t.Fatalf("Next after the end = %+v", a)
			}
		})
	}
}

func TestDriverConfirmedUnknownNode(t *testing.T) {
	d := NewDriver(nodeList(3), 3)
	act := script(t, d, nodeList(3), map[string]answer{"n0": grant, "n1": dontCare, "n2": grant})
	if !slices.Equal(act.Confirm, []string{"n0", "n2"}) {
		t.Fatalf("action %+v", act)
	}
	ignored := func(a Action) {
		t.Helper()
		if a.Done != Pending || a.Ask != "" || len(a.Confirm) > 0 || len(a.Release) > 0 {
			t.Fatalf("ignored confirm result gave %+v", a)
		}
	}
	ignored(d.Confirmed("zz", false))
	ignored(d.Confirmed("n1", false)) // asked, but did not grant
	ignored(d.Confirmed("n0", true))
	ignored(d.Confirmed("n0", false)) // answered already
	ignored(d.Answer("n2", true, Denied, nil))
	if a := d.Confirmed("n2", true); a.Done != Won {
		t.Fatalf("outcome %+v, want won", a)
	}
}

func TestDriverCopiesNodes(t *testing.T) {
	nodes := nodeList(2)
	d := NewDriver(nodes, 2)
	nodes[0], nodes[1] = "x", "y"
	if a := d.Next(); a.Ask != "n0" {
		t.Fatalf("driver shares the caller's slice: asked %q", a.Ask)
	}
}

func TestStrings(t *testing.T) {
	for k, want := range map[Kind]string{Granted: "granted", Denied: "denied", DontCare: "don't care", 0: "kind(0)", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d) = %q, want %q", uint8(k), got, want)
		}
	}
	for o, want := range map[Outcome]string{Pending: "pending", Won: "won", Lost: "lost", Unknown: "unknown", Failed: "failed"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d) = %q, want %q", int(o), got, want)
		}
	}
}
