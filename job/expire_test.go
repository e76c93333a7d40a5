package job

import (
	"math/rand/v2"
	"testing"
)

// apply is the replica operator pool.Apply uses: expire what is held and
// what arrives, then join.
func apply(held, in State, now int64) State { return Merge(Expire(held, now), Expire(in, now)) }

// randTimedState draws a valid state whose times fall in [1, 12], so that
// a random now in [0, 14] finds claims both live and lapsed.
func randTimedState(r *rand.Rand) State {
	clients := []string{"a", "b", "ab"}
	c := clients[r.IntN(len(clients))]
	switch r.IntN(6) {
	case 0:
		return State{}
	case 1:
		return tomb(c, 1+r.Int64N(6))
	case 2, 3:
		start := 1 + r.Int64N(6)
		return claimed(c, start, start+1+r.Int64N(6))
	case 4:
		return finished(c, 1+r.Int64N(12), []string{"x", "y"}[r.IntN(2)])
	}
	return collected(1 + r.Int64N(12))
}

func TestExpireLaws(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var lapsed, orderedPairsLapsing int
	for range propIters {
		a, b := randTimedState(r), randTimedState(r)
		now, later := r.Int64N(15), r.Int64N(15)
		if later < now {
			now, later = later, now
		}
		ea, eb := Expire(a, now), Expire(b, now)
		if err := ea.Validate(); err != nil {
			t.Fatalf("Expire(%+v, %d) = %+v is invalid: %v", a, now, ea, err)
		}
		if Compare(ea, a) < 0 {
			t.Fatalf("not inflationary: Expire(%+v, %d) = %+v", a, now, ea)
		}
		if !fieldsEqual(Expire(ea, now), ea) {
			t.Fatalf("not idempotent: %+v at %d", a, now)
		}
		if !fieldsEqual(Expire(ea, later), Expire(a, later)) {
			t.Fatalf("expiring at %d then %d differs from at %d alone: %+v", now, later, later, a)
		}
		if Compare(a, b) <= 0 && Compare(ea, eb) > 0 {
			t.Fatalf("not monotone at %d: %+v <= %+v but %+v > %+v", now, a, b, ea, eb)
		}
		if a.Phase == Claimed && ea.Phase == Ready {
			lapsed++
			if Compare(a, b) < 0 && b.Phase == Claimed && eb.Phase == Claimed {
				orderedPairsLapsing++
			}
		}
	}
	if lapsed == 0 || orderedPairsLapsing == 0 {
		t.Fatalf("%d lapses, %d below a live claim: the ranges do not exercise Expire", lapsed, orderedPairsLapsing)
	}
}

// TestExpireCommutesWithMerge: expiring before or after the join gives the
// same state, so a replica's result does not depend on whether its expiry
// loop ran before a state arrived.
func TestExpireCommutesWithMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b State
		now  int64
		want State
	}{
		// The audit's counterexample: the released later claim wins over
		// the live earlier one, before and after expiry alike.
		{"audit: released later claim vs live earlier claim",
			claimed("c1", 10, 15), claimed("c2", 5, 100), 25, tomb("c1", 10)},
		{"release vs the claim it releases", claimed("a", 10, 11), claimed("a", 10, 100), 25, tomb("a", 10)},
		{"release not yet lapsed", claimed("a", 10, 30), claimed("a", 10, 100), 25, claimed("a", 10, 30)},
		{"tombstone vs the claim it ended", tomb("a", 10), claimed("a", 10, 100), 25, tomb("a", 10)},
		{"re-claim after a lapse", tomb("a", 10), claimed("b", 20, 100), 25, claimed("b", 20, 100)},
		{"lapsed re-claim", claimed("a", 10, 15), claimed("b", 20, 22), 25, tomb("b", 20)},
		{"same start, both lapse", claimed("a", 10, 15), claimed("b", 10, 20), 25, tomb("b", 10)},
		{"same start, smaller client lapses", claimed("a", 10, 15), claimed("b", 10, 100), 25, claimed("b", 10, 100)},
		{"same start, greater client lapses", claimed("b", 10, 15), claimed("a", 10, 100), 25, tomb("b", 10)},
		{"finished over a lapsed claim", finished("a", 12, "r"), claimed("b", 20, 22), 25, finished("a", 12, "r")},
		{"ready vs lapsed claim", State{}, claimed("a", 10, 15), 25, tomb("a", 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forms := map[string]State{
				"expire then merge":            Merge(Expire(tt.a, tt.now), Expire(tt.b, tt.now)),
				"merge then expire":            Expire(Merge(tt.a, tt.b), tt.now),
				"only a expired (b's loop)":    Expire(Merge(Expire(tt.a, tt.now), tt.b), tt.now),
				"only b expired (a's loop)":    Expire(Merge(tt.a, Expire(tt.b, tt.now)), tt.now),
				"pool.Apply, a held":           apply(tt.a, tt.b, tt.now),
				"pool.Apply, b held":           apply(tt.b, tt.a, tt.now),
				"expired at both, then merged": apply(Expire(tt.a, tt.now), Expire(tt.b, tt.now), tt.now),
			}
			for name, got := range forms {
				if !fieldsEqual(got, tt.want) {
					t.Errorf("%s = %+v, want %+v", name, got, tt.want)
				}
			}
		})
	}
	r := rand.New(rand.NewPCG(15, 16))
	for range propIters {
		a, b, now := randTimedState(r), randTimedState(r), r.Int64N(15)
		x, y := Merge(Expire(a, now), Expire(b, now)), Expire(Merge(a, b), now)
		if !fieldsEqual(x, y) {
			t.Fatalf("at %d: Merge(Expire(a), Expire(b)) = %+v, Expire(Merge(a, b)) = %+v\na=%+v\nb=%+v", now, x, y, a, b)
		}
	}
}

// event is one step of a replica simulation.
type event struct {
	kind int // evLocal, evSync or evExpire
	i, j int
	now  int64
	op   int // evLocal: which change
}

const (
	evLocal = iota
	evSync
	evExpire
)

// schedule draws a random history for n replicas: local changes, two-way
// syncs and expiry-loop runs, at non-decreasing times.
func schedule(r *rand.Rand, n, steps int) []event {
	var evs []event
	now := int64(1)
	for range steps {
		now += r.Int64N(3)
		e := event{kind: r.IntN(3), i: r.IntN(n), j: r.IntN(n), now: now, op: r.IntN(6)}
		evs = append(evs, e)
	}
	return evs
}

// localChange is what a replica does to a job at now, given the state it
// sees: a client claims it, releases its claim, submits a result, or the
// project collects it. op and the client picked by it are fixed by the
// schedule, so every timing variant makes the same change.
func localChange(seen State, op int, now int64) (State, bool) {
	client := []byte{"abc"[op%3]}
	switch {
	case op < 3 && seen.Phase == Ready:
		return State{Phase: Claimed, Client: client, Start: now, Deadline: now + 2 + int64(op)}, true
	case op == 3 && seen.Phase == Claimed:
		rel := seen
		rel.Deadline = max(now, seen.Start+1)
		return rel, true
	case op == 4 && seen.Phase == Claimed:
		return State{Phase: Finished, Client: seen.Client, At: now, Result: []byte("r")}, true
	case op == 5 && seen.Phase == Finished:
		return State{Phase: Collected, At: now}, true
	}
	return State{}, false
}

// simulate runs a schedule on n replicas. Each replica merges with the
// pool.Apply operator or, if lazy, joins without expiring (time reaches
// it only through its expiry loop); an expiry event runs only if runs says
// so. It returns the replicas' states, what each saw after every event,
// every state ever introduced and how many of those were releases.
func simulate(evs []event, n int, lazy []bool, runs func(k int) bool) (final []State, seen [][]State, all []State, releases int) {
	st := make([]State, n)
	merge := func(i int, held, in State, now int64) State {
		if lazy[i] {
			return Merge(held, in)
		}
		return apply(held, in, now)
	}
	for k, e := range evs {
		switch e.kind {
		case evLocal:
			if x, ok := localChange(Expire(st[e.i], e.now), e.op, e.now); ok {
				all = append(all, x)
				if e.op == 3 {
					releases++
				}
				st[e.i] = merge(e.i, st[e.i], x, e.now)
			}
		case evSync:
			st[e.j] = merge(e.j, st[e.j], st[e.i], e.now)
			st[e.i] = merge(e.i, st[e.i], st[e.j], e.now)
		case evExpire:
			if runs(k) {
				st[e.i] = Expire(st[e.i], e.now)
			}
		}
		row := make([]State, n)
		for i := range st {
			row[i] = Expire(st[i], e.now)
		}
		seen = append(seen, row)
	}
	// Heal: every pair exchanges once more, at the end.
	end := evs[len(evs)-1].now + 1
	for range 2 {
		for i := range n {
			for j := range n {
				st[j] = merge(j, st[j], st[i], end)
			}
		}
	}
	for i := range st {
		st[i] = Expire(st[i], end)
	}
	return st, seen, all, releases
}

// TestReplicasConvergeWhateverExpiryTiming: replicas that exchange states
// at random and run their expiry loops at random times (or merge without
// expiring at all) see the same states at every step and converge to the
// join of everything introduced, expired at the end.
func TestReplicasConvergeWhateverExpiryTiming(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var lapses, releases int
	for iter := range 400 {
		n := 2 + r.IntN(4)
		evs := schedule(r, n, 10+r.IntN(60))
		var ref []State
		var refSeen [][]State
		for v := range 6 {
			lazy := make([]bool, n)
			mask := r.Uint64()
			switch v {
			case 0: // the reference: every expiry loop runs, no replica is lazy
				mask = ^uint64(0)
			default:
				for i := range lazy {
					lazy[i] = r.IntN(2) == 0
				}
			}
			final, seen, all, rel := simulate(evs, n, lazy, func(k int) bool { return mask>>(k%64)&1 == 1 })
			end := evs[len(evs)-1].now + 1
			want := State{}
			for _, x := range all {
				want = Merge(want, x)
			}
			want = Expire(want, end)
			for i, s := range final {
				if !fieldsEqual(s, want) {
					t.Fatalf("iter %d variant %d: replica %d ends %+v, want the join %+v", iter, v, i, s, want)
				}
			}
			if v == 0 {
				ref, refSeen = final, seen
				releases += rel
				if want.IsTombstone() {
					lapses++
				}
				continue
			}
			for k := range seen {
				for i := range seen[k] {
					if !fieldsEqual(seen[k][i], refSeen[k][i]) {
						t.Fatalf("iter %d variant %d: after event %d (%+v) replica %d sees %+v, with every expiry run %+v",
							iter, v, k, evs[k], i, seen[k][i], refSeen[k][i])
					}
				}
			}
			for i := range final {
				if !fieldsEqual(final[i], ref[i]) {
					t.Fatalf("iter %d variant %d: replica %d ends %+v, reference %+v", iter, v, i, final[i], ref[i])
				}
			}
		}
	}
	if lapses == 0 || releases == 0 {
		t.Fatalf("%d runs ended in a tombstone, %d releases: the schedules do not exercise expiry", lapses, releases)
	}
}

// TestAuditCounterexampleReplicas replays the audit's counterexample on
// two replicas: one holds a released claim, the other a live earlier
// claim; whether either ran its expiry loop before they sync, both end on
// the released claim's tombstone.
func TestAuditCounterexampleReplicas(t *testing.T) {
	released, valid := claimed("c1", 10, 15), claimed("c2", 5, 100)
	const now = 25
	want := tomb("c1", 10)
	for _, loops := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		a, b := released, valid
		if loops[0] {
			a = Expire(a, now)
		}
		if loops[1] {
			b = Expire(b, now)
		}
		a, b = apply(a, b, now), apply(b, a, now)
		if !fieldsEqual(a, want) || !fieldsEqual(b, want) {
			t.Errorf("expiry loops ran %v: replicas end %+v and %+v, want %+v", loops, a, b, want)
		}
	}
}
