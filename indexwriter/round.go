package indexwriter

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
)

// op is one planned write or withdraw.
type op struct {
	key      string
	keyword  string
	listing  []byte
	certRef  []byte
	replicas [][]byte
	reset    bool
	final    bool // a withdrawal the job's state calls for (wire.IndexRef.Final)
	point    keyspace.Pos
	place    []byte // the job's batch root from its listing (job.Listing.Place); empty: placed by its key
}

// placeKey is the key the op's job is placed by (job.PlaceKey), which
// its entry's point follows (index.EntryPoint).
func (o op) placeKey() []byte { return job.PlaceKey([]byte(o.key), o.place) }

// plan is a round's planned operations: writes and withdrawals by index
// node, entries still to be placed in their keyword's region, and final
// withdrawals to send to their entries' points (sweepOrphans).
type plan struct {
	writes, withdraws map[peer.ID][]op
	unplaced, blind   []op
}

// process plans and sends the writes and withdraws for the given held
// jobs and for the jobs gone from the pool: those in gone, or, on a full
// round (gone nil), every job written for that is no longer held. A round
// (probe set) probes the nodes ahead of this one, so the next closest
// takes over from a dead writer, and rewrites the entries due; a flush
// (probe nil) does neither. Either way the peers the ranks rested on are
// watched from then on (roundState.ahead).
func (w *Writer) process(ctx context.Context, helds []pool.Held, gone map[string]bool, probe *dht.Prober) WriteStats {
	now := w.env.Now().UnixMilli()
	pl := &plan{writes: map[peer.ID][]op{}, withdraws: map[peer.ID][]op{}}
	held := map[string]bool{}
	for _, h := range helds {
		held[string(h.Key)] = true
	}
	rankOf := w.rankPass(ctx, probe, w.rounds.ahead)
	for _, h := range helds {
		if w.planJob(h, rankOf(h.Pos), probe != nil, now, pl) {
			w.sweepOrphans(h, pl)
		}
	}
	w.planGone(held, gone, pl)
	return w.send(ctx, pl)
}

// planJob adds what one held job's entries need (index.Reconcile) to pl.
// A node that joined nearer the job takes its listing over once it holds
// the job: until then this node keeps the entries it wrote. It reports
// whether the job's entries are to be swept (sweepOrphans): this node is
// its closest, wrote none of them, and its state lists it nowhere.
func (w *Writer) planJob(h pool.Held, rank int, rewrite bool, now int64, pl *plan) (sweep bool) {
	k := string(h.Key)
	backup, listingHeld, listed := w.backupDue(k, rank, h.State, now), w.pool.ListingHeld(h.Key), w.listed(k)
	closest := index.Lists(rank == 0, backup, listingHeld, listed)
	var tmpl op // what every write of the job carries
	var keywords []string
	if closest && (h.State.Phase == job.Ready || h.State.Phase == job.Finished || h.Trickles) {
		var ok bool
		if tmpl, keywords, ok = w.listingOf(h); !ok {
			return
		}
	}
	want := index.WithTrickles(index.Desired(closest, h.State, keywords, h.Project), closest, h.Trickles, h.Project)
	w.mu.Lock()
	defer w.mu.Unlock()
	if rank != 0 && !backup && listingHeld && listed {
		w.rounds.retry[k] = true // a hand-on in progress: look again next round
	}
	st := w.state[k]
	if st == nil {
		st = &written{where: map[string]placed{}}
		w.state[k] = st
	}
	// A job claimed and given back before its entries were withdrawn:
	// rewrite them at once, ending the quarantine its claimer caused.
	tmpl.reset = h.State.Phase == job.Ready && w.claimed[k]
	if h.State.Phase == job.Ready {
		delete(w.claimed, k)
	}
	was := make([]string, 0, len(st.where))
	for kw := range st.where {
		was = append(was, kw)
	}
	r := index.Reconcile(was, want, rewrite && now >= st.next, tmpl.reset)
	sweep = rank == 0 && len(st.where) == 0 && len(want) == 0 && h.State.Phase != job.Ready && w.swept[k] != sweepOf(h.State)
	for _, kw := range r.Withdraw {
		at := st.where[kw].at
		final := index.RuledOut(h.State, kw, h.Project)
		pl.withdraws[at] = append(pl.withdraws[at], op{key: k, keyword: kw, final: final})
		delete(st.where, kw)
		if final && h.State.Phase != job.Ready {
			w.swept[k] = sweepOf(h.State)
		}
	}
	tmpl.key = k
	for _, kw := range r.Place {
		o := tmpl
		o.keyword = kw
		pl.unplaced = append(pl.unplaced, o)
	}
	for _, kw := range r.Rewrite {
		o, at := tmpl, st.where[kw]
		o.keyword, o.point = kw, at.point
		pl.writes[at.at] = append(pl.writes[at.at], o)
	}
	if r.Reschedule {
		st.next = now + w.jitter()
		if !r.Forget {
			w.schedule(k, st.next, dueRewrite)
		}
	}
	if r.Forget {
		delete(w.state, k)
	}
	return sweep
}

// listingOf is what a held job's writes carry — its signed listing, the
// project's certificate reference and its live replicas — and the
// listing's keywords; false when the job's envelope does not decode.
func (w *Writer) listingOf(h pool.Held) (op, []string, bool) {
	env, err := w.pool.Envelope(h.Key)
	if err != nil {
		return op{}, nil, false
	}
	_, l, err := job.DecodeListing(env.Listing)
	if err != nil {
		return op{}, nil, false
	}
	o := op{listing: env.Listing, certRef: []byte(h.CertRef), place: l.Place} // the pool decoded the spec as it accepted it
	for _, p := range w.d.NearestLocal(h.Pos, w.d.Replication()) {
		if !w.d.IsMarkedDead(p) {
			o.replicas = append(o.replicas, []byte(p))
		}
	}
	return o, l.Keywords, true
}

// planGone withdraws what was written for the jobs gone from the pool
// (those in gone, or every one not held when gone is nil). With gone set
// (a flush of the pool's changes) it looks at gone's jobs only: the work
// is the change's size, not the number of jobs this node ever listed.
func (w *Writer) planGone(held, gone map[string]bool, pl *plan) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gone != nil {
		for k := range gone {
			if !held[k] {
				w.dropGone(k, pl)
			}
		}
		return
	}
	for k := range w.swept {
		if !held[k] {
			delete(w.swept, k)
		}
	}
	for k := range w.state {
		if !held[k] {
			w.dropGone(k, pl)
		}
	}
}

// dropGone forgets job k, gone from the pool, and plans the withdrawal
// of every entry written for it. w.mu is held.
func (w *Writer) dropGone(k string, pl *plan) {
	delete(w.swept, k)
	st, ok := w.state[k]
	if !ok {
		return
	}
	delete(w.backups, k)
	for kw, p := range st.where {
		pl.withdraws[p.at] = append(pl.withdraws[p.at], op{key: k, keyword: kw})
	}
	delete(w.state, k)
}

// send places the unplaced entries, sends the withdrawals, then the
// writes. An entry is placed at its job's point of the keyword's region
// (indexclient.Regions.EntryPoint), the same for every writer.
func (w *Writer) send(ctx context.Context, pl *plan) WriteStats {
	var stats WriteStats
	for _, o := range pl.blind {
		at, err := w.regions.TargetAt(dht.WithPurpose(ctx, dht.PurposeIndexWrite), o.keyword, w.regions.EntryPoint(o.keyword, o.placeKey()))
		if err == nil {
			pl.withdraws[at] = append(pl.withdraws[at], o)
		}
	}
	for _, o := range pl.unplaced {
		x := w.regions.EntryPoint(o.keyword, o.placeKey())
		at, err := w.regions.TargetAt(dht.WithPurpose(ctx, dht.PurposeIndexWrite), o.keyword, x)
		if err != nil {
			stats.Failed++
			w.retryNext(o.key)
			continue
		}
		o.point = x
		pl.writes[at] = append(pl.writes[at], o)
	}
	for at, ops := range pl.withdraws {
		if err := w.withdraw(ctx, at, ops); err != nil {
			stats.Failed++
			continue
		}
		stats.Withdrawn += len(ops)
	}
	w.sendWrites(ctx, pl.writes, &stats)
	return stats
}

// sendWrites writes the entries. An entry whose index node redirects it
// (a node moved in next to its point) follows the redirect; one whose
// node failed is placed anew at once (the node is marked dead and the
// region views dropped).
func (w *Writer) sendWrites(ctx context.Context, writes map[peer.ID][]op, stats *WriteStats) {
	for attempt := 0; attempt < 3 && len(writes) > 0; attempt++ {
		retry := map[peer.ID][]op{}
		for at, ops := range writes {
			res := w.write(ctx, at, ops)
			for i, o := range ops {
				w.recordWrite(o, at, res[i].ok, stats)
				switch {
				case res[i].ok:
				case res[i].moved != "" && res[i].moved != at && attempt < 2:
					retry[res[i].moved] = append(retry[res[i].moved], o)
				case attempt == 0 && res[i].moved == "":
					x := w.regions.EntryPoint(o.keyword, o.placeKey())
					if next, err := w.regions.TargetAt(dht.WithPurpose(ctx, dht.PurposeIndexWrite), o.keyword, x); err == nil && next != at {
						o.point = x
						retry[next] = append(retry[next], o)
						continue
					}
					stats.Failed++
					w.retryNext(o.key)
				default:
					stats.Failed++
					w.retryNext(o.key)
				}
			}
		}
		writes = retry
	}
}

// recordWrite keeps where an entry now is written (ok), or forgets it.
func (w *Writer) recordWrite(o op, at peer.ID, ok bool, stats *WriteStats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state[o.key]
	switch {
	case st == nil:
	case ok:
		if _, was := st.where[o.keyword]; was {
			stats.Rewritten++
		} else {
			stats.Written++
		}
		st.where[o.keyword] = placed{at: at, point: o.point}
		w.rounds.targets[at] = true
	default:
		delete(st.where, o.keyword)
	}
}

// retryNext has the next round visit job k again (a write of it failed).
func (w *Writer) retryNext(k string) {
	w.mu.Lock()
	w.rounds.retry[k] = true
	w.mu.Unlock()
}
