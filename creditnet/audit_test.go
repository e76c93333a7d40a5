package creditnet

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
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
