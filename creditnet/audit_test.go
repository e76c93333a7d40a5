package creditnet

import (
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// TestAuditTally: an audit of r = 5 nodes stops once more answers cannot
// change its verdict, and finds a lie only with 3 holding the job
// claimed.
func TestAuditTally(t *testing.T) {
	const (
		claimed = 'c' // holds it claimed by the client
		other   = 'h' // holds it, not claimed by the client (finished, ready…)
		absent  = 'a' // answers, does not hold it
		silent  = 's' // no answer
	)
	for _, c := range []struct {
		answers      string
		asked        int // answers taken before decided (len: never decided)
		lie, decided bool
	}{
		{"hhhhh", 3, false, true},  // honest report, good view: three gets
		{"ccccc", 3, true, true},   // a lie: three gets
		{"chhhh", 4, false, true},  // one replica behind
		{"cchhh", 5, false, true},  // two behind: still no majority claimed
		{"hcchc", 5, true, true},   // a lie found at the last answer
		{"aaaaa", 5, false, false}, // the view is not the job's nodes: look it up
		{"hhaaa", 5, false, false}, // two holders: open
		{"chhaa", 5, false, false}, // three holders, one claimed: open (the others may hold it claimed)
		{"sssss", 5, false, false}, // nobody answered
		{"hhash", 5, false, true},  // a silent node and a non-holder: three holders decide
		{"", 0, false, false},      // an empty view
	} {
		tally := auditTally{r: 5}
		asked := 0
		for _, a := range c.answers {
			if tally.decided() {
				break
			}
			tally.add(auditAnswer{answered: a != silent, holds: a == claimed || a == other, claimed: a == claimed})
			asked++
		}
		if asked != c.asked || tally.lie() != c.lie || tally.decided() != c.decided {
			t.Errorf("%q: asked %d, lie %v, decided %v; want %d, %v, %v",
				c.answers, asked, tally.lie(), tally.decided(), c.asked, c.lie, c.decided)
		}
	}
}

// TestRunAudit: the audit asks this node's view first and looks the
// place up only when its view is not the job's nodes; each node is
// asked once. Control: trusting the view alone misses a lie told where
// the view is wrong.
func TestRunAudit(t *testing.T) {
	ids := func(names string) []peer.ID {
		var out []peer.ID
		for _, n := range names {
			out = append(out, peer.ID(string(n)))
		}
		return out
	}
	for _, c := range []struct {
		name           string
		local, closest string        // the view's nearest, the lookup's
		state          map[rune]byte // node → 'c' claimed, 'h' held, absent otherwise
		lie, lookedUp  bool
		askedAtMost    int
	}{
		{"honest, good view", "ABCDE", "ABCDE", map[rune]byte{'A': 'h', 'B': 'h', 'C': 'h', 'D': 'h', 'E': 'h'}, false, false, 3},
		{"liar, good view", "ABCDE", "ABCDE", map[rune]byte{'A': 'c', 'B': 'c', 'C': 'c', 'D': 'c', 'E': 'c'}, true, false, 3},
		{"liar, wrong view", "VWXYZ", "ABCDE", map[rune]byte{'A': 'c', 'B': 'c', 'C': 'c', 'D': 'c', 'E': 'c'}, true, true, 8},
		{"honest, view half right", "ABXYZ", "ABCDE", map[rune]byte{'A': 'h', 'B': 'h', 'C': 'h', 'D': 'h', 'E': 'h'}, false, true, 8},
		// Three of the view hold it, one claimed: the verdict is open, so
		// the job's other nodes are asked — and hold it claimed.
		{"liar, view missing two", "ABCXY", "ABCDE", map[rune]byte{'A': 'c', 'B': 'h', 'C': 'h', 'D': 'c', 'E': 'c'}, true, true, 7},
	} {
		asked := map[peer.ID]int{}
		ask := func(p peer.ID) auditAnswer {
			asked[p]++
			st := c.state[rune(string(p)[0])]
			return auditAnswer{answered: true, holds: st != 0, claimed: st == 'c'}
		}
		lookedUp := false
		lookup := func() ([]peer.ID, error) { lookedUp = true; return ids(c.closest), nil }
		tally, err := runAudit(5, ids(c.local), lookup, ask)
		if err != nil {
			t.Fatal(err)
		}
		if tally.lie() != c.lie || lookedUp != c.lookedUp || len(asked) > c.askedAtMost {
			t.Errorf("%s: lie %v, looked up %v, asked %d nodes; want %v, %v, at most %d", c.name, tally.lie(), lookedUp, len(asked), c.lie, c.lookedUp, c.askedAtMost)
		}
		for p, n := range asked {
			if n > 1 {
				t.Errorf("%s: %s asked %d times", c.name, p, n)
			}
		}
	}
	// Control: the view's tally alone, where the view is wrong.
	view := tallyOf(5, ids("VWXYZ"), map[peer.ID]auditAnswer{}, func(peer.ID) auditAnswer { return auditAnswer{answered: true} })
	if view.lie() {
		t.Fatal("control: a wrong view found the lie")
	}
}

// TestRunAuditMany: jobs of one place audited together reach, each, the
// verdict its own audit reaches, and each node is asked once for all of
// them; the nodes are asked until every job's verdict is decided.
// Control: the same answers audited one job at a time ask each node
// once per job.
func TestRunAuditMany(t *testing.T) {
	ids := func(names string) []peer.ID {
		var out []peer.ID
		for _, n := range names {
			out = append(out, peer.ID(string(n)))
		}
		return out
	}
	// Per node, each job's state there: 'c' claimed by the client, 'h'
	// held otherwise, absent else. Job 0 was reported honestly, job 1
	// is a lie, job 2 is held claimed by two of five (replicas behind),
	// job 3 was reported honestly and node A lies that it is claimed.
	states := map[peer.ID]string{"A": "hchc", "B": "hcch", "C": "hchh", "D": "hcch", "E": "hc-h"}
	answer := func(p peer.ID, i int) auditAnswer {
		st := states[p][i]
		return auditAnswer{answered: true, holds: st == 'c' || st == 'h', claimed: st == 'c'}
	}
	lookup := func() ([]peer.ID, error) { return ids("ABCDE"), nil }
	calls := map[peer.ID]int{}
	many, err := runAuditMany(5, 4, ids("ABCDE"), lookup, func(p peer.ID) []auditAnswer {
		calls[p]++
		return []auditAnswer{answer(p, 0), answer(p, 1), answer(p, 2), answer(p, 3)}
	})
	if err != nil {
		t.Fatal(err)
	}
	alone := 0
	for i := range 4 {
		one, err := runAudit(5, ids("ABCDE"), lookup, func(p peer.ID) auditAnswer { alone++; return answer(p, i) })
		if err != nil {
			t.Fatal(err)
		}
		if many[i] != one {
			t.Errorf("job %d: audited together %+v, alone %+v", i, many[i], one)
		}
	}
	if want := []bool{false, true, false, false}; many[0].lie() != want[0] || many[1].lie() != want[1] || many[2].lie() != want[2] || many[3].lie() != want[3] {
		t.Errorf("lies %v %v %v %v, want %v", many[0].lie(), many[1].lie(), many[2].lie(), many[3].lie(), want)
	}
	for p, n := range calls {
		if n > 1 {
			t.Errorf("%s asked %d times", p, n)
		}
	}
	if len(calls) != 5 || alone <= len(calls) {
		t.Errorf("together asked %d nodes, alone %d asks; want 5 (job 2 needs every node) and more alone", len(calls), alone)
	}
}

// TestAuditAnswersOf: a node's answer to jobs asked together comes in
// their order, those it lacks named missing; one that does not account
// for every job counts as no answer.
func TestAuditAnswersOf(t *testing.T) {
	client := []byte("client")
	reps := []*wire.QuotaReport{{Client: client, Job: []byte("j0")}, {Client: client, Job: []byte("j1")}, {Client: client, Job: []byte("j2")}}
	claimed := wire.JobEnvelope{State: job.State{Phase: job.Claimed, Client: client}}
	other := wire.JobEnvelope{State: job.State{Phase: job.Claimed, Client: []byte("another")}}
	got := answersOf(reps, &wire.GetResponse{Jobs: []wire.JobEnvelope{claimed, other}, Missing: [][]byte{[]byte("j1")}})
	want := []auditAnswer{{answered: true, holds: true, claimed: true}, {answered: true}, {answered: true, holds: true}}
	if !slices.Equal(got, want) {
		t.Errorf("answers %+v, want %+v", got, want)
	}
	got = answersOf(reps, &wire.GetResponse{Jobs: []wire.JobEnvelope{claimed}})
	if !slices.Equal(got, make([]auditAnswer, 3)) {
		t.Errorf("an answer short of jobs: %+v, want none answered", got)
	}
}
