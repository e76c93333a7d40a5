package indexwriter

import (
	"container/heap"
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/pool"
)

// roundState is what lets a round visit only the jobs that need it
// instead of every job the node holds: a round's work on a job depends on
// the job's state (its changes reach the writer by onChange, and a
// flush), on the clock (a rewrite or a backup lister's wait comes due: the
// due queue), on a write that failed or a hand-on in progress (retry),
// and on this node's view of the nodes around the job (a node ahead of
// this one died or came, the routing table changed). The last is what
// the full rounds of before caught by looking at every job every Tick; a
// round now probes the peers any job's rank rested on (ahead) and the
// index nodes written to (targets), compares the view with the last full
// visit's, and visits every job only when it changed — or FullRound after
// the last full visit, a safety net for what no event announces.
type roundState struct {
	due      dueQueue         // (ms, job): a rewrite or a backup wait ends then
	retry    map[string]bool  // jobs to visit next round: a write failed, or a hand-on is in progress
	ahead    map[peer.ID]bool // peers found nearer a job than this node since the last full visit
	targets  map[peer.ID]bool // index nodes written to since the last full visit
	view     []string         // the routing view at the last full visit (viewOf); nil: none yet
	lastFull int64            // ms: when the last full visit began
}

func newRoundState() roundState {
	return roundState{retry: map[string]bool{}, ahead: map[peer.ID]bool{}, targets: map[peer.ID]bool{}}
}

// dueItem is one entry of the due queue: job key is to be visited at
// (ms, this node's clock), for a rewrite or the end of a backup wait.
type dueItem struct {
	at   int64
	key  string
	kind dueKind
}

type dueKind uint8

const (
	dueRewrite dueKind = iota // the job's entries' rewrite time (written.next)
	dueBackup                 // the end of this node's wait as the job's backup lister
)

// dueQueue is a min-heap of dueItems by time (container/heap). An item is
// stale when the job's rewrite time moved or its backup wait ended; a
// stale item is dropped when it comes due (isDue), so the queue holds at
// most one item per reschedule within RewriteMax.
type dueQueue []dueItem

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueItem)) }
func (q *dueQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// schedule queues job k for a visit at (ms). w.mu is held.
func (w *Writer) schedule(k string, at int64, kind dueKind) {
	heap.Push(&w.rounds.due, dueItem{at: at, key: k, kind: kind})
}

// popDue takes the jobs due by now off the queue into keys, leaving out
// the stale items. w.mu is held.
func (w *Writer) popDue(now int64, keys map[string]bool) {
	for w.rounds.due.Len() > 0 && w.rounds.due[0].at <= now {
		it := heap.Pop(&w.rounds.due).(dueItem)
		switch it.kind {
		case dueRewrite:
			if st := w.state[it.key]; st != nil && st.next == it.at {
				keys[it.key] = true
			}
		case dueBackup:
			if _, waits := w.backups[it.key]; waits {
				keys[it.key] = true
			}
		}
	}
}

// Round writes what is missing, rewrites what is due and withdraws what
// should no longer be listed. It visits every held job when this node's
// view of the nodes changed since the last full visit (or FullRound
// passed, or none was made yet); otherwise only the jobs that changed,
// came due or are to be retried. Either way it first probes the peers the
// jobs' ranks rested on and the index nodes written to, so a dead writer
// ahead of this node, or a dead index node, changes the view and has this
// round visit every job: the next closest takes the listing over within
// one Tick, as when every round was full.
func (w *Writer) Round(ctx context.Context) WriteStats {
	if w.pool.Behind() {
		// A restarted node's jobs may have been claimed or finished while
		// it was down: nothing is listed before its pool caught up
		// (pool.CatchUp).
		return WriteStats{}
	}
	w.busy.Lock()
	defer w.busy.Unlock()
	now := w.env.Now().UnixMilli()
	probe := w.d.NewProber()
	w.probeWatched(ctx, probe)
	rs := &w.rounds
	if rs.view == nil || !slices.Equal(w.viewOf(), rs.view) || now-rs.lastFull >= w.cfg.FullRound.Milliseconds() || now < rs.lastFull {
		return w.fullRound(ctx, probe, now)
	}
	w.mu.Lock()
	keys := w.dirty
	w.dirty = map[string]bool{}
	for k := range rs.retry {
		keys[k] = true
	}
	clear(rs.retry)
	w.popDue(now, keys)
	w.mu.Unlock()
	helds, gone := w.lookup(keys)
	st := w.process(ctx, helds, gone, probe)
	st.Visited = len(keys)
	return st
}

// fullRound visits every held job, and every job written for that is no
// longer held, and starts the watch (ahead, targets, view) afresh.
func (w *Writer) fullRound(ctx context.Context, probe *dht.Prober, now int64) WriteStats {
	rs := &w.rounds
	w.mu.Lock()
	w.dirty = map[string]bool{}
	clear(rs.retry)
	clear(rs.ahead)
	clear(rs.targets)
	w.mu.Unlock()
	w.dropDeadTargets(ctx, probe)
	var helds []pool.Held
	w.pool.Each(func(h pool.Held) bool {
		helds = append(helds, h)
		return true
	})
	st := w.process(ctx, helds, nil, probe)
	st.Visited, st.Full = len(helds), true
	rs.view, rs.lastFull = w.viewOf(), now
	return st
}

// lookup splits keys into the jobs held and those gone from the pool.
func (w *Writer) lookup(keys map[string]bool) (helds []pool.Held, gone map[string]bool) {
	gone = map[string]bool{}
	for k := range keys {
		if h, ok := w.pool.Lookup([]byte(k)); ok {
			helds = append(helds, h)
		} else {
			gone[k] = true
		}
	}
	return helds, gone
}

// probeWatched probes the peers any job's rank rested on since the last
// full visit and the index nodes written to; one that fails is marked
// dead, which changes the view (viewOf).
func (w *Writer) probeWatched(ctx context.Context, probe *dht.Prober) {
	w.mu.Lock()
	watched := make([]peer.ID, 0, len(w.rounds.ahead)+len(w.rounds.targets))
	for p := range w.rounds.ahead {
		watched = append(watched, p)
	}
	for p := range w.rounds.targets {
		if !w.rounds.ahead[p] {
			watched = append(watched, p)
		}
	}
	w.mu.Unlock()
	for _, p := range watched {
		probe.Alive(ctx, p)
	}
}

// viewOf is this node's view of the nodes, as ranks see it: its own
// position and each routing-table peer, with a mark when it is marked
// dead; sorted.
func (w *Writer) viewOf() []string {
	self := w.d.Self()
	out := []string{string(self[:])}
	for _, p := range w.d.RoutingTablePeers() {
		s := string(p)
		if w.d.IsMarkedDead(p) {
			s += "\x00dead"
		}
		out = append(out, s)
	}
	slices.Sort(out[1:])
	return out
}
