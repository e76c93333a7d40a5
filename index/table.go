package index

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/google/btree"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
)

// Config tunes a Table. Zero values take the defaults (thesis 4.3).
type Config struct {
	// Expiry is how long an entry lives unless rewritten, in ms.
	// Default 16 min.
	Expiry int64
	// Quarantine is how long a served entry is held back, in ms, unless
	// withdrawn first. Default 2 min.
	Quarantine int64
	// LMin is the least number of oldest entries a selection draws from.
	// Default 8. LMin 1 with a negligible LFactor (say 1e-9; 0 takes the
	// default) gives strict oldest-first.
	LMin int
	// LFactor is l's margin over ρ·d (entries served before feedback).
	// Default 4.
	LFactor float64
	// RateWindow is the time constant of the query-rate estimate, in ms.
	// Default 60 s.
	RateWindow int64
	// DefaultDelay is the withdraw delay assumed before one is observed,
	// in ms. Default 2 s.
	DefaultDelay int64
}

func (c *Config) applyDefaults() {
	if c.Expiry == 0 {
		c.Expiry = 16 * 60_000
	}
	if c.Quarantine == 0 {
		c.Quarantine = 2 * 60_000
	}
	if c.LMin == 0 {
		c.LMin = 8
	}
	if c.LFactor == 0 {
		c.LFactor = 4
	}
	if c.RateWindow == 0 {
		c.RateWindow = 60_000
	}
	if c.DefaultDelay == 0 {
		c.DefaultDelay = 2000
	}
}

// Entry is one index entry: a job listed under its primary keyword, with
// all the job's keywords for local joins.
type Entry struct {
	Keyword  string       // primary keyword: the region it lives in
	Job      []byte       // job key (CID bytes)
	Project  string       // the job's project
	Created  int64        // job creation time, ms: the age order
	Keywords []string     // all the job's keywords, sorted
	Replicas []string     // the job's nodes as its writer last saw them
	Point    keyspace.Pos // where in the region the entry was placed (zero: unknown)
	Listing  []byte       // the signed listing, to hand the entry over
	Place    []byte       // the job's batch root from its listing (job.Listing.Place); empty: placed by Job
	Writer   string       // the entry's author, whose withdrawal removes it (peer ID; "": unknown); see Put
	WriterAt int64        // ms: when Writer last wrote the entry
	Expires  int64        // ms; rewriting extends it
	Held     int64        // quarantined until, ms (0: never served)
	Served   int64        // when last served, ms
	// ServedN is how many times the entry was served; Declines how many
	// declines of it clients sent, Notes the latest (at most MaxNotes,
	// oldest first, copied on write). All kept while the entry is held.
	ServedN  int
	Declines int
	Notes    []Note
}

func less(a, b *Entry) bool {
	if a.Created != b.Created {
		return a.Created < b.Created
	}
	return bytes.Compare(a.Job, b.Job) < 0
}

// bucket holds one keyword's entries, oldest first, and its estimators.
type bucket struct {
	tree    *btree.BTreeG[*Entry]
	byJob   map[string]*Entry
	queries rate
	delay   mean // ms from serve to withdraw
}

// Table is one node's index entries. Not safe for concurrent use: one
// goroutine owns it.
type Table struct {
	cfg     Config
	buckets map[string]*bucket
	n       int
	queried queryLog // clients' queries per keyword, for explanations
}

// NewTable returns an empty table.
func NewTable(cfg Config) *Table {
	cfg.applyDefaults()
	return &Table{cfg: cfg, buckets: make(map[string]*bucket)}
}

// Config is the table's configuration, defaults applied.
func (t *Table) Config() Config { return t.cfg }

// Len is the number of entries.
func (t *Table) Len() int { return t.n }

// Keywords returns the number of entries per primary keyword.
func (t *Table) Keywords() map[string]int {
	out := make(map[string]int, len(t.buckets))
	for k, b := range t.buckets {
		out[k] = len(b.byJob)
	}
	return out
}

func (t *Table) bucket(kw string, create bool) *bucket {
	b := t.buckets[kw]
	if b == nil && create {
		b = &bucket{tree: btree.NewG(16, less), byJob: make(map[string]*Entry)}
		t.buckets[kw] = b
	}
	return b
}

// Put adds an entry or, for one already held, extends its expiry and
// updates its replica set (its quarantine stands). A rewrite by another
// writer makes it the entry's author only if it is nearer the job than the
// author, or the author has not written for Expiry (takesAuthorship). It
// returns whether the entry is new.
func (t *Table) Put(e Entry, now int64) bool {
	b := t.bucket(e.Keyword, true)
	if old, ok := b.byJob[string(e.Job)]; ok {
		old.Expires = now + t.cfg.Expiry
		if len(e.Replicas) > 0 {
			old.Replicas = e.Replicas
		}
		if !e.Point.IsZero() {
			old.Point = e.Point
		}
		if e.Writer != "" && t.takesAuthorship(old, e.Writer, now) {
			old.Writer, old.WriterAt = e.Writer, now
		}
		return false
	}
	e.Expires, e.Held, e.Served, e.WriterAt = now+t.cfg.Expiry, 0, 0, now
	e.ServedN, e.Declines, e.Notes = 0, 0, nil
	ep := &e
	b.byJob[string(e.Job)] = ep
	b.tree.ReplaceOrInsert(ep)
	t.n++
	return true
}

// takesAuthorship decides whether writer, rewriting entry e at now,
// becomes its author. A job's closest node lists it (and, after a delay,
// backup listers: indexwriter.Config.Listers), so of two nodes that
// both write it (views differ for a while after a join, a move or a
// death; or a backup lister), the one nearer the job keeps the entry: the
// farther one's rewrite must not make its later withdrawal (once it sees
// the nearer node) remove the entry the nearer one keeps written. An
// author that has not written for Expiry is taken to be gone: the next
// writer takes over. Pure.
func (t *Table) takesAuthorship(e *Entry, writer string, now int64) bool {
	if e.Writer == "" || e.Writer == writer || now >= e.WriterAt+t.cfg.Expiry {
		return true
	}
	return keyspace.CloserTo(keyspace.KeyPos(job.PlaceKey(e.Job, e.Place)), keyspace.PeerPos([]byte(writer)), keyspace.PeerPos([]byte(e.Writer)))
}

// Unquarantine ends an entry's quarantine (its job was claimed and given
// back) and reports whether the entry exists.
func (t *Table) Unquarantine(keyword string, jobKey []byte) bool {
	b := t.bucket(keyword, false)
	if b == nil {
		return false
	}
	e, ok := b.byJob[string(jobKey)]
	if ok {
		e.Held = 0
	}
	return ok
}

// Withdraw removes the entry of job under keyword on behalf of node by
// ("": unconditionally); a served entry's delay from serving to withdrawal
// feeds the estimate of d. An entry of another author (see Put) is kept:
// after a move the job's old writer withdraws while its new one writes,
// and the old writer's withdrawal must not remove the new writer's entry.
func (t *Table) Withdraw(keyword string, jobKey []byte, by string, now int64) bool {
	b := t.bucket(keyword, false)
	if b == nil {
		return false
	}
	e, ok := b.byJob[string(jobKey)]
	if !ok || (by != "" && e.Writer != "" && e.Writer != by) {
		return false
	}
	if e.Served > 0 && now >= e.Served {
		b.delay.add(float64(now-e.Served), 0.2)
	}
	t.remove(keyword, b, e)
	return true
}

func (t *Table) remove(kw string, b *bucket, e *Entry) {
	b.tree.Delete(e)
	delete(b.byJob, string(e.Job))
	t.n--
	if len(b.byJob) == 0 {
		delete(t.buckets, kw)
	}
}

// Expire deletes entries not rewritten in time and returns how many.
func (t *Table) Expire(now int64) int {
	n := 0
	for kw, b := range t.buckets {
		var dead []*Entry
		for _, e := range b.byJob {
			if now >= e.Expires {
				dead = append(dead, e)
			}
		}
		for _, e := range dead {
			t.remove(kw, b, e)
			n++
		}
	}
	return n
}

// L is the number of oldest matching entries a selection under keyword
// draws from at now: max(LMin, ceil(LFactor·ρ·d)).
func (t *Table) L(keyword string, now int64) int {
	b := t.bucket(keyword, false)
	if b == nil {
		return t.cfg.LMin
	}
	return t.l(b, now)
}

func (t *Table) l(b *bucket, now int64) int {
	rho := b.queries.perSecond(now, float64(t.cfg.RateWindow))
	d := float64(t.cfg.DefaultDelay)
	if b.delay.ok {
		d = b.delay.v
	}
	l := int(math.Ceil(t.cfg.LFactor * rho * d / 1000))
	return max(l, t.cfg.LMin)
}

// Select answers a client's query under keyword: up to n entries chosen at
// random among the l oldest live, unquarantined entries that match, each
// then quarantined. It counts the query for the rate estimate.
func (t *Table) Select(q *Query, keyword string, n int, now int64, rng *rand.Rand) []Entry {
	return t.SelectSkipping(q, keyword, n, now, rng, nil)
}

// SelectSkipping is Select for an asker that will not take the jobs skip
// reports (nil: none): they are passed over as if they did not match, so
// the l oldest are drawn from the entries the asker may take.
func (t *Table) SelectSkipping(q *Query, keyword string, n int, now int64, rng *rand.Rand, skip func(job []byte) bool) []Entry {
	t.queried.add(keyword, now)
	b := t.bucket(keyword, false)
	if b == nil || n <= 0 {
		return nil
	}
	b.queries.add(now, float64(t.cfg.RateWindow))
	l := max(t.l(b, now), n)
	var cands []*Entry
	b.tree.Ascend(func(e *Entry) bool {
		if now < e.Expires && now >= e.Held && q.Match(e.Keywords) && (skip == nil || !skip(e.Job)) {
			cands = append(cands, e)
		}
		return len(cands) < l
	})
	if len(cands) > n {
		cands = selectDraw(cands, n, rng)
	}
	out := make([]Entry, len(cands))
	for i, e := range cands {
		e.Held, e.Served = now+t.cfg.Quarantine, now
		e.ServedN++
		out[i] = *e
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := cmp.Compare(a.Created, b.Created); c != 0 {
			return c
		}
		return bytes.Compare(a.Job, b.Job)
	})
	return out
}

// selectDraw is how a selection picks its entries (drawByPlace; the
// tests' control swaps in a uniform draw).
var selectDraw = drawByPlace

// drawByPlace picks n of cands (more than n): the first at random, then
// as many as there are of the first's place (job.PlaceKey: its batch),
// at random among them, then the rest at random among the others. A
// client is served jobs of one place where the l oldest hold them, which
// it claims together (issue 23: one request and one confirm per node
// for all of them); the first pick stays uniform, so concurrent askers
// are spread as before, and the entries served are quarantined, so no
// two answers overlap. Entries placed alone (no batch) have places of
// their own: for them this is the uniform draw it was.
func drawByPlace(cands []*Entry, n int, rng *rand.Rand) []*Entry {
	j := rng.IntN(len(cands))
	cands[0], cands[j] = cands[j], cands[0]
	first := cands[0]
	same := 1 // cands[1:same] are of first's place
	if len(first.Place) > 0 {
		for i := 1; i < len(cands); i++ {
			if bytes.Equal(cands[i].Place, first.Place) {
				cands[same], cands[i] = cands[i], cands[same]
				same++
			}
		}
	}
	// Partial Fisher-Yates within each part: first's place, then others.
	take := 1
	for ; take < n && take < same; take++ {
		j := take + rng.IntN(same-take)
		cands[take], cands[j] = cands[j], cands[take]
	}
	for ; take < n; take++ {
		j := take + rng.IntN(len(cands)-take)
		cands[take], cands[j] = cands[j], cands[take]
	}
	return cands[:n]
}

// Cursor marks a place in a keyword's age order for paging.
type Cursor struct {
	Created int64
	Job     []byte
}

// Page lists, for a harvest, up to limit live entries under keyword that
// match, oldest first, after the cursor (nil: from the start), quarantine
// ignored and untouched. more reports whether entries remain.
func (t *Table) Page(q *Query, keyword string, after *Cursor, limit int, now int64) (out []Entry, more bool) {
	b := t.bucket(keyword, false)
	if b == nil || limit <= 0 {
		return nil, false
	}
	visit := func(e *Entry) bool {
		if after != nil && !less(&Entry{Created: after.Created, Job: after.Job}, e) {
			return true
		}
		if now >= e.Expires || !q.Match(e.Keywords) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, *e)
		return true
	}
	if after != nil {
		b.tree.AscendGreaterOrEqual(&Entry{Created: after.Created, Job: after.Job}, visit)
	} else {
		b.tree.Ascend(visit)
	}
	return out, more
}

// Get returns the entry of job under keyword.
func (t *Table) Get(keyword string, jobKey []byte) (Entry, bool) {
	b := t.bucket(keyword, false)
	if b == nil {
		return Entry{}, false
	}
	e, ok := b.byJob[string(jobKey)]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Each calls f for every live entry (any order) until f returns false.
func (t *Table) Each(now int64, f func(Entry) bool) {
	for _, b := range t.buckets {
		for _, e := range b.byJob {
			if now < e.Expires && !f(*e) {
				return
			}
		}
	}
}
