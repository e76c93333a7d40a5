package project

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func openTestLedger(t testing.TB) (*Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// undecidedFullScan is Ledger.Undecided as it was before the to_validate
// queue: every unit of the ledger, grouped and counted.
func undecidedFullScan(t testing.TB, l *Ledger) []int64 {
	t.Helper()
	rows, err := l.db.Query(`SELECT u.id, u.copies, COUNT(r.cid), COUNT(j.cid), u.status = ? AND SUM(r.cid IS NOT NULL AND r.valid IS NULL) > 0
		FROM units u JOIN jobs j ON j.unit = u.id LEFT JOIN results r ON r.job = j.id
		GROUP BY u.id HAVING COUNT(r.cid) > 0 AND (u.status != ? OR SUM(r.cid IS NOT NULL AND r.valid IS NULL) > 0) ORDER BY u.id`, UnitValid, UnitValid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var unit int64
		var asked, results, issued int
		var ungraded bool
		if err := rows.Scan(&unit, &asked, &results, &issued, &ungraded); err != nil {
			t.Fatal(err)
		}
		if ungraded || results >= Quorum(asked) || results >= issued {
			out = append(out, unit)
		}
	}
	return out
}

// decideOneByOne is how a harvest validated before: each unit of the full
// scan on its own, with the per-unit ledger reads and one transaction per
// unit. Copies due are not issued (both sides of the comparison skip them).
func decideOneByOne(t testing.TB, l *Ledger, eq Equal) (decided int) {
	t.Helper()
	for _, unit := range undecidedFullScan(t, l) {
		status, err := l.UnitStatus(unit)
		if err != nil {
			t.Fatal(err)
		}
		results, err := l.UnitResults(unit)
		if err != nil {
			t.Fatal(err)
		}
		if status == UnitValid {
			var canonical string
			if err := l.db.QueryRow(`SELECT canonical FROM units WHERE id = ?`, unit).Scan(&canonical); err != nil {
				t.Fatal(err)
			}
			if err := l.SetVerdict(unit, Regrade(results, canonical, eq)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		_, issued, err := l.UnitOf(results[0].CID)
		if err != nil {
			t.Fatal(err)
		}
		var asked int
		if err := l.db.QueryRow(`SELECT copies FROM units WHERE id = ?`, unit).Scan(&asked); err != nil {
			t.Fatal(err)
		}
		v := Validate(results, issued, Quorum(asked), eq)
		if err := l.SetVerdict(unit, v); err != nil {
			t.Fatal(err)
		}
		if v.Status == UnitValid {
			decided++
		}
	}
	return decided
}

// validateAll runs every page of validateQueued, as a harvest does.
func validateAll(t testing.TB, l *Ledger, eq Equal) (decided int, extra []int64) {
	t.Helper()
	for after, more := int64(0), true; more; {
		pg, err := l.validateQueued(after, HarvestOptions{Equal: eq}, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		after, more = pg.last, pg.more
		decided += pg.decided
		extra = append(extra, pg.extra...)
	}
	return decided, extra
}

// ledgerVerdicts is every unit's status and canonical result and every
// result's grade, as text to compare.
func ledgerVerdicts(t testing.TB, l *Ledger) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{`SELECT id, status, COALESCE(canonical, '-') FROM units ORDER BY id`,
		`SELECT cid, COALESCE(valid, -1), '' FROM results ORDER BY cid`} {
		rows, err := l.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, s, c string
			if err := rows.Scan(&a, &s, &c); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s %s\n", a, s, c)
		}
		rows.Close()
	}
	return b.String()
}

func queued(t testing.TB, l *Ledger) []int64 {
	t.Helper()
	rows, err := l.db.Query(`SELECT unit FROM to_validate ORDER BY unit`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var u int64
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// scenario drives two ledgers through the same random harvests: units of
// 1 to 3 copies, results arriving a few at a time from honest, lying and
// failing clients, extra copies for inconclusive units.
type scenario struct {
	r     *rand.Rand
	units [][]string // CIDs of each unit's jobs, by unit index
	done  map[string]bool
	batch int
}

func newScenario(seed uint64) *scenario {
	return &scenario{r: rand.New(rand.NewPCG(seed, 1)), done: map[string]bool{}}
}

// submit records n units of copies jobs in both ledgers.
func (s *scenario) submit(t testing.TB, ls []*Ledger, n, copies int) {
	t.Helper()
	s.batch++
	digest := fmt.Sprintf("batch%d", s.batch)
	var units [][]string
	for _, l := range ls {
		units = fillLedger(t, l, digest, n, copies)
	}
	s.units = append(s.units, units...)
}

// results returns up to n results of jobs not yet done: outputs agree
// unless a liar or a failure draws otherwise.
func (s *scenario) results(n int) []Result {
	var out []Result
	for _, u := range s.r.Perm(len(s.units)) {
		for _, c := range s.units[u] {
			if s.done[c] || len(out) >= n || s.r.IntN(3) == 0 {
				continue
			}
			s.done[c] = true
			r := Result{CID: c, Client: fmt.Sprintf("w%d", s.r.IntN(4)), Output: []byte(fmt.Sprintf("unit %d", u)), At: time.UnixMilli(int64(1000 + s.r.IntN(50)))}
			r.ClientKey = []byte(r.Client)
			switch s.r.IntN(8) {
			case 0:
				r.Output = []byte("lie")
			case 1:
				r.ExitCode, r.Error = 1, "failed"
			}
			out = append(out, r)
		}
	}
	return out
}

// TestUndecidedIncremental: through random harvests, the queue-driven
// validation records the very verdicts and grades validating every unit
// of the ledger one by one did; Undecided lists what the full scan lists
// but open units without a new result (whose verdict only a new result
// can change); after a pass the queue holds only units still in the full
// scan (or due another copy).
func TestUndecidedIncremental(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			queue, _ := openTestLedger(t)
			full, _ := openTestLedger(t)
			ls := []*Ledger{queue, full}
			s := newScenario(seed)
			for round := range 12 {
				if round%4 == 0 {
					s.submit(t, ls, 5+s.r.IntN(20), 1+s.r.IntN(3))
				}
				rs := s.results(1 + s.r.IntN(25))
				now := time.UnixMilli(int64(round))
				for _, l := range ls {
					if err := l.RecordResults(rs, now); err != nil {
						t.Fatal(err)
					}
				}
				got, err := queue.Undecided()
				if err != nil {
					t.Fatal(err)
				}
				touched := map[int64]bool{}
				for _, r := range rs {
					var unit int64
					if err := queue.db.QueryRow(`SELECT unit FROM jobs WHERE cid = ?`, r.CID).Scan(&unit); err != nil {
						t.Fatal(err)
					}
					touched[unit] = true
				}
				want := undecidedFullScan(t, full)
				for _, unit := range got {
					if !slices.Contains(want, unit) {
						t.Fatalf("round %d: Undecided lists unit %d, the full scan does not (%v, %v)", round, unit, got, want)
					}
				}
				for _, unit := range want {
					st, _ := queue.UnitStatus(unit)
					if !slices.Contains(got, unit) && (touched[unit] || st != UnitOpen) {
						t.Fatalf("round %d: Undecided %v leaves out unit %d (%s, new result: %v) of the full scan %v", round, got, unit, st, touched[unit], want)
					}
				}
				decidedQ, extra := validateAll(t, queue, nil)
				decidedF := decideOneByOne(t, full, nil)
				if a, b := ledgerVerdicts(t, queue), ledgerVerdicts(t, full); a != b || decidedQ != decidedF {
					t.Fatalf("round %d: verdicts differ (decided %d and %d):\n%s\nwant\n%s", round, decidedQ, decidedF, a, b)
				}
				// Another copy for each inconclusive unit, in both.
				for _, unit := range extra {
					_, maxCopy, err := queue.AnyJob(unit)
					if err != nil {
						t.Fatal(err)
					}
					c := fmt.Sprintf("extra-%d-%d", unit, maxCopy+1)
					for _, l := range ls {
						if err := l.Prepare([]PreparedJob{{CID: c, Unit: unit, Copy: maxCopy + 1, Signed: []byte{1}, Listing: []byte{2}}}, now); err != nil {
							t.Fatal(err)
						}
					}
					s.addJob(queue, unit, c)
				}
				left := undecidedFullScan(t, full)
				q := queued(t, queue)
				for _, unit := range left {
					if st, _ := queue.UnitStatus(unit); !slices.Contains(q, unit) && st != UnitOpen {
						t.Fatalf("round %d: unit %d (%s) is undecided by the full scan and not queued", round, unit, st)
					}
				}
				for _, unit := range q {
					if !slices.Contains(left, unit) && !slices.Contains(extra, unit) {
						t.Fatalf("round %d: unit %d queued after the pass, but the full scan has it decided", round, unit)
					}
				}
			}
			// Once every job has returned, nothing is left to do.
			if again, _ := validateAll(t, queue, nil); again != 0 {
				t.Fatalf("a pass with no new result decided %d units", again)
			}
		})
	}
}

// addJob notes an extra copy's job in the scenario's unit.
func (s *scenario) addJob(l *Ledger, unit int64, cid string) {
	var idx int
	var digest []byte
	if err := l.db.QueryRow(`SELECT u.idx, b.digest FROM units u JOIN batches b ON b.id = u.batch WHERE u.id = ?`, unit).Scan(&idx, &digest); err != nil {
		panic(err)
	}
	for i, u := range s.units {
		if len(u) > 0 && strings.HasPrefix(u[0], fmt.Sprintf("%s-u%d-", digest, idx)) {
			s.units[i] = append(s.units[i], cid)
			return
		}
	}
	panic("unit not found")
}

// TestQueueKeepsUnitWithNewResult: a unit whose results changed between
// loading it for validation and recording its verdict stays queued.
func TestQueueKeepsUnitWithNewResult(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 1, 3)
	now := time.Now()
	rec := func(i int, out string) {
		t.Helper()
		if err := l.RecordResults([]Result{{CID: cids[0][i], Client: fmt.Sprint(i), ClientKey: []byte{byte(i)}, Output: []byte(out), At: now}}, now); err != nil {
			t.Fatal(err)
		}
	}
	rec(0, "a")
	units, err := l.queuedUnits(0, 10)
	if err != nil || len(units) != 1 || units[0].undecided() {
		t.Fatalf("queued %v %v: want the unit, waiting for a second result", units, err)
	}
	rec(1, "a") // meanwhile
	if err := l.settle(nil, []unitVerdict{{unit: units[0].id, done: true, results: len(units[0].results)}}, now); err != nil {
		t.Fatal(err)
	}
	if q := queued(t, l); len(q) != 1 {
		t.Fatalf("queue %v: the unit with a new result left it", q)
	}
	if decided, _ := validateAll(t, l, nil); decided != 1 {
		t.Fatalf("decided %d units, want the unit with two agreeing results", decided)
	}
	if q := queued(t, l); len(q) != 0 {
		t.Fatalf("queue %v after the unit was decided and graded", q)
	}
}

// TestOpenLedgerRequeuesUngraded: results recorded without queueing their
// units (a ledger written by a version without the queue) are queued when
// the ledger opens, so the next harvest validates them.
func TestOpenLedgerRequeuesUngraded(t *testing.T) {
	l, path := openTestLedger(t)
	cids := fillLedger(t, l, "b", 4, 1)
	now := time.Now()
	onRecord := 0
	for i := range 3 {
		n, err := l.recordResults([]Result{{CID: cids[i][0], Client: "w", ClientKey: []byte("w"), Output: []byte("x"), At: now}}, now, true)
		if err != nil {
			t.Fatal(err)
		}
		onRecord += n
	}
	if decided, _ := validateAll(t, l, nil); onRecord+decided != 3 {
		t.Fatalf("decided %d as recorded and %d after, want 3", onRecord, decided)
	}
	// An older version records the fourth result and no queue entry.
	if _, err := l.db.Exec(`INSERT INTO results(job, cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested)
		VALUES((SELECT id FROM jobs WHERE cid = ?1), ?1, 'w', x'77', x'78', 0, '', 0, 0, 0, 0)`, cids[3][0]); err != nil {
		t.Fatal(err)
	}
	if u, err := l.Undecided(); err != nil || len(u) != 0 {
		t.Fatalf("undecided %v %v before reopening: the test needs the unit unqueued", u, err)
	}
	l.Close()
	l2, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	u, err := l2.Undecided()
	if err != nil || len(u) != 1 {
		t.Fatalf("undecided %v %v after reopening, want the unit of the unqueued result", u, err)
	}
	if want := undecidedFullScan(t, l2); !slices.Equal(u, want) {
		t.Fatalf("undecided %v, the full scan %v", u, want)
	}
}

// TestLedgerQueriesUseIndexes: the statements of a harvest pass and a
// submission look rows up by key; none walks a table or an index range
// that grows with the ledger (jobs, results, units: every job ever
// submitted), which is what made a pass cost more the longer a project
// ran.
func TestLedgerQueriesUseIndexes(t *testing.T) {
	l, _ := openTestLedger(t)
	fillLedger(t, l, "b", 50, 2)
	for name, q := range map[string]string{
		"queued units": qQueuedUnits, "queued results": qQueuedResults, "states": qStates, "harvested": qHarvested,
		"mark submitted": qMarkSubmitted, "mark harvested": qMarkHarvested, "queue units": qQueueUnits,
		"mark collected": qMarkCollected, "set status": qSetStatus, "set status none": qSetStatusNone, "grade": qGrade, "unqueue": qUnqueueUnits,
		"insert result": qInsertResult, "insert job": qInsertJob, "unit id": qUnitID,
		"record facts": qRecordFacts, "known": qKnown, "job specs": qJobSpecs, "result of": qResultOf, "unit of": qUnitOf,
		"mark receipted": qMarkReceipted, "uncredited of": qUncreditedOf, "refs of": qRefsOf,
	} {
		n := strings.Count(q, "?")
		args := make([]any, 0, n)
		for i := range n {
			args = append(args, []any{"x", 1, "[]", "y", 2, 3, 4, 5, 6, 7}[i%10])
		}
		if strings.Contains(q, "?5") {
			args = []any{"x", 1, "{}", "y", 5}
		} else if strings.Contains(q, "?4") {
			args = []any{"x", 1, "[]", "y"}
		} else if strings.Contains(q, "?2") {
			args = []any{"x", "[]", "a", "b"}
		}
		checkPlan(t, l, name, q, args)
	}
}

// checkPlan fails t when SQLite's plan of q walks a table that grows with
// the ledger: a scan, a range search, or the jobs of a state.
func checkPlan(t *testing.T, l *Ledger, name, q string, args []any) {
	t.Helper()
	grows := []string{"jobs", "results", "units", " j ", " r ", " u ", " k "}
	plan := queryPlan(t, l, name, q, args...)
	for _, step := range plan {
		scan := strings.HasPrefix(step, "SCAN ")
		rng := strings.HasPrefix(step, "SEARCH ") && (strings.Contains(step, ">?") || strings.Contains(step, "<?")) &&
			!strings.HasPrefix(step, "SEARCH t ") // the queue itself
		state := strings.Contains(step, "jobs_state") && name != "harvested" // few jobs wait harvested
		for _, g := range grows {
			if (scan || rng || state) && strings.Contains(step+" ", g) {
				t.Errorf("%s: %q walks a table that grows with the ledger; plan:\n  %s", name, step, strings.Join(plan, "\n  "))
			}
		}
	}
}

// TestLazyTxRestoresSynchronous: a lazy transaction runs with
// synchronous=NORMAL and leaves the connection at FULL, also when it
// fails; the synced writes run at FULL.
func TestLazyTxRestoresSynchronous(t *testing.T) {
	l, _ := openTestLedger(t)
	sync := func(q interface {
		QueryRow(string, ...any) *sql.Row
	}) int {
		t.Helper()
		var n int
		if err := q.QueryRow(`PRAGMA synchronous`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := sync(l.db); n != 2 {
		t.Fatalf("synchronous %d after opening, want 2 (FULL)", n)
	}
	boom := errors.New("boom")
	for _, fail := range []bool{false, true} {
		var inside int
		err := l.lazyTx(func(tx *sql.Tx) error {
			inside = sync(tx)
			if fail {
				return boom
			}
			return nil
		})
		if fail != errors.Is(err, boom) {
			t.Fatalf("lazyTx: %v", err)
		}
		if inside != 1 {
			t.Fatalf("synchronous %d in a lazy transaction, want 1 (NORMAL)", inside)
		}
		if n := sync(l.db); n != 2 {
			t.Fatalf("synchronous %d after a lazy transaction (failed: %v), want 2 (FULL)", n, fail)
		}
	}
	cids := fillLedger(t, l, "b", 2, 1)
	if err := l.MarkSubmitted(map[string]int{cids[0][0]: 5, cids[1][0]: 4}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if st, _ := l.Known(cids[1][0]); st != StateSubmitted || sync(l.db) != 2 {
		t.Fatalf("after MarkSubmitted: state %q, synchronous %d", st, sync(l.db))
	}
}

// TestRecordBatch: a new batch is recorded with its units and jobs in one
// transaction (none of it when a job fails); a re-run finds them and
// records only the units and copies missing.
func TestRecordBatch(t *testing.T) {
	l, _ := openTestLedger(t)
	now := time.Now()
	job := func(idx, c int) unitJob {
		return unitJob{idx: idx, PreparedJob: PreparedJob{CID: fmt.Sprintf("j%d.%d", idx, c), Copy: c, Signed: []byte{1}, Listing: []byte{2}}}
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := l.db.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	b := &batchRecord{digest: []byte("d"), source: "f", units: 3, copies: 2, unitIDs: map[int]int64{}}
	// A failing job (the same CID twice) records nothing.
	if err := l.record(b, []unitJob{job(0, 0), job(0, 0)}, now); err == nil {
		t.Fatal("a batch with a job twice recorded")
	}
	if b.id != 0 || len(b.unitIDs) != 0 || count(`SELECT COUNT(*) FROM batches`)+count(`SELECT COUNT(*) FROM units`)+count(`SELECT COUNT(*) FROM jobs`) != 0 {
		t.Fatalf("a failed record left batch %d, units %v, or rows in the ledger", b.id, b.unitIDs)
	}
	if err := l.record(b, []unitJob{job(0, 0), job(0, 1), job(1, 0)}, now); err != nil {
		t.Fatal(err)
	}
	if b.id == 0 || len(b.unitIDs) != 2 {
		t.Fatalf("batch %d, units %v", b.id, b.unitIDs)
	}
	if id, err := l.findBatch([]byte("d")); err != nil || id != b.id {
		t.Fatalf("findBatch: %d %v, want %d", id, err, b.id)
	}
	// The re-run's view.
	ids, have, err := l.batchUnits(b.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || len(have[ids[0]]) != 2 || !have[ids[1]][0] || have[ids[1]][1] {
		t.Fatalf("batch units %v, copies %v", ids, have)
	}
	b2 := &batchRecord{id: b.id, digest: []byte("d"), units: 3, copies: 2, unitIDs: ids}
	if err := l.record(b2, []unitJob{job(1, 1), job(2, 0), job(2, 1)}, now); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT COUNT(*) FROM units`); n != 3 {
		t.Fatalf("%d units, want 3", n)
	}
	if n := count(`SELECT COUNT(*) FROM (SELECT unit FROM jobs GROUP BY unit HAVING COUNT(*) = 2)`); n != 3 {
		t.Fatalf("%d units with both copies, want 3", n)
	}
	if n := count(`SELECT COUNT(*) FROM batches`); n != 1 {
		t.Fatalf("%d batches, want 1", n)
	}
	// The older entry points agree.
	unit, err := l.EnsureUnit(b.id, 2, 2)
	if err != nil || unit != b2.unitIDs[2] {
		t.Fatalf("EnsureUnit: %d %v, want %d", unit, err, b2.unitIDs[2])
	}
	if c, err := l.Copies(unit); err != nil || len(c) != 2 {
		t.Fatalf("Copies: %v %v", c, err)
	}
	if id, existed, err := l.Batch([]byte("d"), "f", 3, 2, now); err != nil || !existed || id != b.id {
		t.Fatalf("Batch: %d %v %v", id, existed, err)
	}
	if id, existed, err := l.Batch([]byte("e"), "f", 0, 1, now); err != nil || existed || id == b.id || id == 0 {
		t.Fatalf("Batch (new): %d %v %v", id, existed, err)
	}
}

// TestStatesAndHarvested: the many-jobs lookups agree with the one-job
// ones and ignore CIDs that are not the project's.
func TestStatesAndHarvested(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 3, 1)
	now := time.Now()
	if err := l.MarkSubmitted(map[string]int{cids[1][0]: 5}, now); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordResults([]Result{{CID: cids[2][0], Client: "w", ClientKey: []byte("w"), Output: []byte("x"), At: now}}, now); err != nil {
		t.Fatal(err)
	}
	all := []string{cids[0][0], cids[1][0], cids[2][0], "not-ours", `quote"d`}
	st, err := l.states(all)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		want, err := l.Known(c)
		if err != nil {
			t.Fatal(err)
		}
		if st[c] != want {
			t.Errorf("job %s: states %q, Known %q", c, st[c], want)
		}
	}
	if h, err := l.Harvested(); err != nil || !slices.Equal(h, []string{cids[2][0]}) {
		t.Fatalf("Harvested %v %v", h, err)
	}
	if err := l.MarkCollected([]string{cids[2][0], cids[0][0]}, now); err != nil {
		t.Fatal(err)
	}
	st, _ = l.states(all)
	if st[cids[2][0]] != StateCollected || st[cids[0][0]] != StatePrepared {
		t.Fatalf("after MarkCollected: %v (only a harvested job becomes collected)", st)
	}
	if h, err := l.Harvested(); err != nil || len(h) != 0 {
		t.Fatalf("Harvested %v %v after MarkCollected", h, err)
	}
	// A unit of one copy is decided as its result is recorded
	// (ledger_decide.go): the result is graded valid with it.
	var valid sql.NullBool
	if err := l.db.QueryRow(`SELECT valid FROM results WHERE cid = ?`, cids[2][0]).Scan(&valid); err != nil || !valid.Valid || !valid.Bool {
		t.Fatalf("the result of a unit of one copy is not graded valid as recorded: %v %v", valid, err)
	}
}
