package project

import (
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/up-pool/up/job"
)

// qUnitOf reads a job's unit (?2 its CID) and the copies issued, those
// in state ?1 (lost) left out.
var qUnitOf = `SELECT j.unit, (SELECT COUNT(*) FROM jobs k WHERE k.unit = j.unit AND k.state != ?1) FROM jobs j
	WHERE ` + jobWithCID("j", "?2")

// UnitOf returns a job's unit and how many copies of it were issued
// (jobs declared lost left out: they will never return a result).
func (l *Ledger) UnitOf(cid string) (unit int64, issued int, err error) {
	if err := l.indexCIDs(); err != nil {
		return 0, 0, err
	}
	err = l.db.QueryRow(qUnitOf, StateLost, cid).Scan(&unit, &issued)
	return unit, issued, err
}

// UnitResults returns a unit's harvested results.
func (l *Ledger) UnitResults(unit int64) ([]Copy, error) {
	rows, err := l.db.Query(`SELECT r.cid, r.client_key, r.output, r.exit_code, r.error FROM results r JOIN jobs j ON j.id = r.job WHERE j.unit = ? ORDER BY r.at, r.cid`, unit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Copy
	for rows.Next() {
		var c Copy
		var code int
		var msg string
		if err := rows.Scan(&c.CID, &c.ClientKey, &c.Output, &code, &msg); err != nil {
			return nil, err
		}
		c.Failed = code != 0 || msg != ""
		out = append(out, c)
	}
	return out, rows.Err()
}

// UnitStatus returns a unit's status.
func (l *Ledger) UnitStatus(unit int64) (string, error) {
	var st string
	err := l.db.QueryRow(`SELECT status FROM units WHERE id = ?`, unit).Scan(&st)
	return st, err
}

// Undecided lists the units whose verdict may change: those not yet valid
// with at least as many results as their quorum needs, or as copies were
// issued; and valid ones with a late result not yet graded. Harvest
// validates them all, so units whose results an interrupted harvest
// recorded are validated by the next one; a unit still waiting for enough
// results is left out, as validating it would only say "open" again, and
// so is an open unit whose results did not change since it was last
// validated.
//
// Only the units queued in to_validate are looked at (those with a result
// recorded since their last validation), so the cost follows the new
// results, not the size of the ledger.
func (l *Ledger) Undecided() ([]int64, error) {
	var out []int64
	for after := int64(0); ; {
		page, err := l.queuedUnits(after, validatePage)
		if err != nil {
			return nil, err
		}
		for _, u := range page {
			if u.undecided() {
				out = append(out, u.id)
			}
		}
		if len(page) < validatePage {
			return out, nil
		}
		after = page[len(page)-1].id
	}
}

// unitState is what validating a unit needs from the ledger.
type unitState struct {
	id        int64
	status    string
	canonical string
	asked     int    // copies the file asked for
	issued    int    // copies issued (jobs of the unit), those declared lost left out
	results   []Copy // in harvest order (at, cid), as UnitResults
	ungraded  int    // results without a grade
	// adaptive marks a unit of adaptive replication; decision is why its
	// first successful result stood alone or it was replicated ("" until
	// decided: adaptiveJudge).
	adaptive bool
	decision string
}

// undecided reports whether validating u may change its verdict (see
// Undecided).
func (u *unitState) undecided() bool {
	n := len(u.results)
	switch {
	case n == 0:
		return false
	case u.status == UnitValid:
		return u.ungraded > 0
	default:
		return n >= Quorum(u.asked) || n >= u.issued
	}
}

// The units queued for validation after a unit, in order, and their
// results (in the order validation takes them: UnitResults'). CROSS JOIN
// makes SQLite walk the queued units and look their jobs up, rather than
// every job in the range of their ids. A copy issued is a job not
// declared lost ('lost' is StateLost): a lost job returns no result, so a
// unit counting it would wait for it for ever.
const (
	qQueuedUnits = `SELECT t.unit, u.status, COALESCE(u.canonical, ''), u.copies, (SELECT COUNT(*) FROM jobs k WHERE k.unit = t.unit AND k.state != 'lost'),
		a.unit IS NOT NULL, COALESCE(a.decision, '')
		FROM to_validate t JOIN units u ON u.id = t.unit LEFT JOIN adaptive a ON a.unit = t.unit WHERE t.unit > ? ORDER BY t.unit LIMIT ?`
	qQueuedResults = `SELECT j.unit, r.cid, r.client_key, r.output, r.exit_code, r.error, r.valid IS NULL
		FROM to_validate t CROSS JOIN jobs j ON j.unit = t.unit JOIN results r ON r.job = j.id
		WHERE t.unit > ? AND t.unit <= ? ORDER BY t.unit, r.at, r.cid`
)

// queuedUnits returns up to limit units of to_validate with ids above
// after, in id order, with their results.
func (l *Ledger) queuedUnits(after int64, limit int) ([]*unitState, error) {
	s, err := l.stmt(qQueuedUnits)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(after, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: units to validate: %w", err)
	}
	var out []*unitState
	byID := map[int64]*unitState{}
	for rows.Next() {
		u := &unitState{}
		if err := rows.Scan(&u.id, &u.status, &u.canonical, &u.asked, &u.issued, &u.adaptive, &u.decision); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: units to validate: %w", err)
		}
		out = append(out, u)
		byID[u.id] = u
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, err
	}
	s, err = l.stmt(qQueuedResults)
	if err != nil {
		return nil, err
	}
	if rows, err = s.Query(after, out[len(out)-1].id); err != nil {
		return nil, fmt.Errorf("ledger: results of the units to validate: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var unit int64
		var c Copy
		var code int
		var msg string
		var ungraded bool
		if err := rows.Scan(&unit, &c.CID, &c.ClientKey, &c.Output, &code, &msg, &ungraded); err != nil {
			return nil, fmt.Errorf("ledger: results of the units to validate: %w", err)
		}
		c.Failed = code != 0 || msg != ""
		if u := byID[unit]; u != nil {
			u.results = append(u.results, c)
			if ungraded {
				u.ungraded++
			}
		}
	}
	return out, rows.Err()
}

// SetVerdict records a unit's validation, at the time of the machine's
// clock.
func (l *Ledger) SetVerdict(unit int64, v Verdict) error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := l.setVerdict(tx, unit, v, time.Now()); err != nil {
		return err
	}
	return tx.Commit()
}

func (l *Ledger) setVerdict(tx *sql.Tx, unit int64, v Verdict, now time.Time) error {
	return l.setVerdicts(tx, []unitVerdict{{unit: unit, verdict: &v}}, now)
}

// setVerdicts records validations: units' statuses (with now as
// status_at where the status changes), results' grades and adaptive
// decisions, and drops the units that are done from to_validate.
func (l *Ledger) setVerdicts(tx *sql.Tx, vs []unitVerdict, now time.Time) error {
	var grades, done [][]any
	statuses := map[string][]jobRef{} // by status: each unit's id and canonical result
	for _, v := range vs {
		if v.verdict != nil {
			statuses[v.verdict.Status] = append(statuses[v.verdict.Status], jobRef{id: v.unit, cid: v.verdict.Canonical})
			for cid, ok := range v.verdict.Valid {
				grade := gradeInvalid
				switch {
				case v.verdict.Duplicate[cid]:
					grade = gradeDuplicate
				case ok:
					grade = gradeValid
				}
				grades = append(grades, []any{cid, grade})
			}
		}
		if v.done {
			done = append(done, []any{v.unit, v.results})
		}
	}
	if err := l.setStatuses(tx, statuses, now); err != nil {
		return err
	}
	if len(grades) > 0 { // qGrade finds the results' jobs by CID
		if _, err := l.fillCIDs(tx, 1); err != nil {
			return err
		}
	}
	for _, st := range []struct {
		q    string
		rows [][]any
	}{{qGrade, grades}, {qUnqueueUnits, done}, {qDecideAdaptive, adaptiveRows(vs, now.UnixMilli())}} {
		if len(st.rows) == 0 {
			continue
		}
		list, err := jsonArg(st.rows)
		if err != nil {
			return err
		}
		if _, err := l.exec(tx, st.q, list); err != nil {
			return err
		}
	}
	return nil
}

// setStatuses writes units' statuses (by status, each unit's id and
// canonical result, "" for none): a statement per status, and per
// whether the units have a canonical result.
func (l *Ledger) setStatuses(tx *sql.Tx, byStatus map[string][]jobRef, now time.Time) error {
	for _, status := range slices.Sorted(maps.Keys(byStatus)) {
		var with []jobRef
		var without []int64
		for _, u := range byStatus[status] {
			if u.cid != "" {
				with = append(with, u)
			} else {
				without = append(without, u.id)
			}
		}
		if len(with) > 0 {
			if _, err := l.exec(tx, qSetStatus, status, now.UnixMilli(), refsArg(with)); err != nil {
				return fmt.Errorf("ledger: status %s of %d units: %w", status, len(with), err)
			}
		}
		if len(without) > 0 {
			list, err := jsonArg(without)
			if err != nil {
				return err
			}
			if _, err := l.exec(tx, qSetStatusNone, status, now.UnixMilli(), list); err != nil {
				return fmt.Errorf("ledger: status %s of %d units: %w", status, len(without), err)
			}
		}
	}
	return nil
}

// A result's grade in the ledger (results.valid): NULL while ungraded.
const (
	gradeInvalid   = 0 // disagreed with the canonical result, or failed
	gradeValid     = 1 // made or matched the canonical result: one credit
	gradeDuplicate = 2 // a client's later copy of a unit: flagged, no credit
)

// unitVerdict is a validation to record: Verdict nil records none.
type unitVerdict struct {
	unit    int64
	verdict *Verdict
	// done: the unit leaves to_validate, as only a new result can change
	// its verdict; results is how many it had, so a result recorded
	// meanwhile keeps it queued.
	done    bool
	results int
	// adaptive is the adaptive decision made in this validation, if any.
	adaptive *adaptiveDecision
}

// settle records, in one transaction (not waiting for the disk: see
// Ledger), the jobs the nodes confirmed collected and a harvest's
// validations.
func (l *Ledger) settle(collected []string, vs []unitVerdict, now time.Time) error {
	if len(collected) == 0 && len(vs) == 0 {
		return nil
	}
	return l.lazyTx(func(tx *sql.Tx) error {
		if err := l.markCollected(tx, collected, now); err != nil {
			return err
		}
		return l.setVerdicts(tx, vs, now)
	})
}

// AnyJob returns one job of a unit (to derive another copy from) and the
// highest copy number used.
func (l *Ledger) AnyJob(unit int64) (signed []byte, maxCopy int, err error) {
	err = l.db.QueryRow(`SELECT s.signed, (SELECT MAX(copy) FROM jobs WHERE unit = ?1) FROM jobs j JOIN specs s ON s.job = j.id
		WHERE j.unit = ?1 ORDER BY j.copy LIMIT 1`, unit).Scan(&signed, &maxCopy)
	return signed, maxCopy, err
}

// Credit is one client's standing.
type Credit struct {
	Client  string `json:"client"`
	Valid   int    `json:"valid"`   // results that made or matched a canonical result
	Invalid int    `json:"invalid"` // results that disagreed with the canonical one, or failed
	// Duplicate counts the client's later copies of units it had returned
	// a copy of before: flagged, no credit.
	Duplicate int           `json:"duplicate"`
	CPU       time.Duration `json:"-"` // CPU time of the valid results; JSON cpu_s
}

// Stats summarise the ledger.
type Stats struct {
	Jobs    map[string]int `json:"jobs"`  // by state
	Units   map[string]int `json:"units"` // by status
	Results int            `json:"results"`
	// Lost counts the jobs declared lost (StateLost): no node could serve
	// their result for T_lost, and their units got another copy.
	Lost      int           `json:"lost"`
	LastHour  int           `json:"last_hour"` // results harvested in the last hour
	Credit    []Credit      `json:"credit"`
	OldestAge time.Duration `json:"-"`     // age of the oldest job not yet harvested; JSON oldest_age_s
	Stuck     []Stuck       `json:"stuck"` // submitted jobs without a result far longer than expected
	// HarvestP50 and HarvestP99 are the nearest-rank median and 99th
	// percentile of the submit→harvest latency of the latest 100,000
	// results: how long after its job was submitted each result was
	// harvested (JSON harvest_p50_s and harvest_p99_s, in seconds); 0
	// without any. HarvestTimed counts the results they are over: the
	// latest results of jobs with a submitted time, 100,000 at most.
	HarvestP50   time.Duration `json:"-"`
	HarvestP99   time.Duration `json:"-"`
	HarvestTimed int           `json:"harvest_timed"`
	// Adaptive counts the units of adaptive replication by decision
	// (AdaptiveSingle, AdaptiveSpotCheck, AdaptiveReplicated; "undecided"
	// for those without a successful result yet); nil without any.
	Adaptive map[string]int `json:"adaptive,omitempty"`
}

// Stats reports jobs by state, units by status, throughput, the
// submit→harvest latency, the jobs stuck without a result, and credit per
// client (one credit per valid
// result; none for invalid ones, nor for a client's duplicate copies of a
// unit, counted apart).
func (l *Ledger) Stats(now time.Time) (Stats, error) {
	s := Stats{Jobs: map[string]int{}, Units: map[string]int{}}
	count := func(q string, into map[string]int) error { return countBy(l.db, q, into) }
	if err := count(`SELECT state, COUNT(*) FROM jobs GROUP BY state`, s.Jobs); err != nil {
		return s, err
	}
	if err := count(`SELECT status, COUNT(*) FROM units GROUP BY status`, s.Units); err != nil {
		return s, err
	}
	s.Lost = s.Jobs[StateLost]
	if err := l.db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(harvested >= ?), 0) FROM results`, now.Add(-time.Hour).UnixMilli()).Scan(&s.Results, &s.LastHour); err != nil {
		return s, err
	}
	var oldest sql.NullInt64
	if err := l.db.QueryRow(`SELECT MIN(prepared) FROM jobs WHERE state IN (?, ?)`, StatePrepared, StateSubmitted).Scan(&oldest); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s, err
	}
	if oldest.Valid {
		s.OldestAge = now.Sub(time.UnixMilli(oldest.Int64))
	}
	var err error
	if s.Stuck, err = l.stuck(now); err != nil {
		return s, err
	}
	if err := l.harvestLatency(&s, harvestWindow); err != nil {
		return s, err
	}
	if err := l.adaptiveStats(&s); err != nil {
		return s, err
	}
	rows, err := l.db.Query(`SELECT client, COALESCE(SUM(valid = 1), 0), COALESCE(SUM(valid = 0), 0), COALESCE(SUM(valid = 2), 0),
		COALESCE(SUM(CASE WHEN valid = 1 THEN cpu_ms ELSE 0 END), 0)
		FROM results GROUP BY client ORDER BY 2 DESC, client`)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var c Credit
		var cpu int64
		if err := rows.Scan(&c.Client, &c.Valid, &c.Invalid, &c.Duplicate, &cpu); err != nil {
			return s, err
		}
		c.CPU = time.Duration(cpu) * time.Millisecond
		s.Credit = append(s.Credit, c)
	}
	return s, rows.Err()
}

// EachResult calls f for every harvested result, in harvest order, with
// the unit's index, its canonical CID (empty when undecided) and its batch.
func (l *Ledger) EachResult(f func(r Result, unitIdx int, canonical string) error) error {
	rows, err := l.db.Query(`SELECT r.cid, r.client, r.client_key, r.output, r.exit_code, r.error, r.cpu_ms, r.wall_ms, r.at, r.valid = 1, r.killed, u.idx, COALESCE(u.canonical, ''), s.signed
		FROM results r JOIN jobs j ON j.id = r.job JOIN units u ON u.id = j.unit JOIN specs s ON s.job = j.id ORDER BY r.harvested, r.cid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r Result
		var cpu, wall, at int64
		var valid sql.NullBool
		var idx int
		var canonical string
		var signed []byte
		if err := rows.Scan(&r.CID, &r.Client, &r.ClientKey, &r.Output, &r.ExitCode, &r.Error, &cpu, &wall, &at, &valid, &r.Killed, &idx, &canonical, &signed); err != nil {
			return err
		}
		if _, spec, err := job.Decode(signed); err == nil {
			r.OutputNames = spec.Outputs
		}
		r.CPU, r.Wall, r.At = time.Duration(cpu)*time.Millisecond, time.Duration(wall)*time.Millisecond, time.UnixMilli(at)
		if valid.Valid {
			v := valid.Bool
			r.Valid = &v
		}
		if err := f(r, idx, canonical); err != nil {
			return err
		}
	}
	return rows.Err()
}
