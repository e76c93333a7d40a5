package project

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// UnitOf returns a job's unit and how many copies of it were issued.
func (l *Ledger) UnitOf(cid string) (unit int64, issued int, err error) {
	err = l.db.QueryRow(`SELECT j.unit, (SELECT COUNT(*) FROM jobs k WHERE k.unit = j.unit) FROM jobs j WHERE j.cid = ?`, cid).Scan(&unit, &issued)
	return unit, issued, err
}

// UnitResults returns a unit's harvested results.
func (l *Ledger) UnitResults(unit int64) ([]Copy, error) {
	rows, err := l.db.Query(`SELECT r.cid, r.client_key, r.output, r.exit_code, r.error FROM results r JOIN jobs j ON j.cid = r.cid WHERE j.unit = ? ORDER BY r.at, r.cid`, unit)
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
// issued; and valid ones with a late result not yet graded. Harvest validates them all, so units whose
// results an interrupted harvest recorded are validated by the next one;
// a unit still waiting for enough results is left out, as validating it
// would only say "open" again.
func (l *Ledger) Undecided() ([]int64, error) {
	rows, err := l.db.Query(`SELECT u.id, u.copies, COUNT(r.cid), COUNT(j.cid), u.status = ? AND SUM(r.cid IS NOT NULL AND r.valid IS NULL) > 0
		FROM units u JOIN jobs j ON j.unit = u.id LEFT JOIN results r ON r.cid = j.cid
		GROUP BY u.id HAVING COUNT(r.cid) > 0 AND (u.status != ? OR SUM(r.cid IS NOT NULL AND r.valid IS NULL) > 0) ORDER BY u.id`, UnitValid, UnitValid)
	if err != nil {
		return nil, fmt.Errorf("ledger: undecided units: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var unit int64
		var asked, results, issued int
		var ungraded bool // decided, with a late result not yet graded
		if err := rows.Scan(&unit, &asked, &results, &issued, &ungraded); err != nil {
			return nil, fmt.Errorf("ledger: undecided units: %w", err)
		}
		if ungraded || results >= Quorum(asked) || results >= issued {
			out = append(out, unit)
		}
	}
	return out, rows.Err()
}

// SetVerdict records a unit's validation.
func (l *Ledger) SetVerdict(unit int64, v Verdict) error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var canonical any
	if v.Canonical != "" {
		canonical = v.Canonical
	}
	if _, err := tx.Exec(`UPDATE units SET status = ?, canonical = ? WHERE id = ?`, v.Status, canonical, unit); err != nil {
		return err
	}
	for cid, ok := range v.Valid {
		if _, err := tx.Exec(`UPDATE results SET valid = ? WHERE cid = ?`, ok, cid); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// AnyJob returns one job of a unit (to derive another copy from) and the
// highest copy number used.
func (l *Ledger) AnyJob(unit int64) (signed []byte, maxCopy int, err error) {
	err = l.db.QueryRow(`SELECT signed, (SELECT MAX(copy) FROM jobs WHERE unit = ?) FROM jobs WHERE unit = ? ORDER BY copy LIMIT 1`, unit, unit).Scan(&signed, &maxCopy)
	return signed, maxCopy, err
}

// Credit is one client's standing.
type Credit struct {
	Client  string
	Valid   int           // results that made or matched a canonical result
	Invalid int           // results that disagreed with the canonical one, or failed
	CPU     time.Duration // CPU time of the valid results
}

// Stats summarise the ledger.
type Stats struct {
	Jobs      map[string]int // by state
	Units     map[string]int // by status
	Results   int
	LastHour  int // results harvested in the last hour
	Credit    []Credit
	OldestAge time.Duration // age of the oldest job not yet harvested
}

// Stats reports jobs by state, units by status, throughput and credit per
// client (one credit per valid result; none for invalid ones).
func (l *Ledger) Stats(now time.Time) (Stats, error) {
	s := Stats{Jobs: map[string]int{}, Units: map[string]int{}}
	count := func(q string, into map[string]int) error {
		rows, err := l.db.Query(q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			into[k] = n
		}
		return rows.Err()
	}
	if err := count(`SELECT state, COUNT(*) FROM jobs GROUP BY state`, s.Jobs); err != nil {
		return s, err
	}
	if err := count(`SELECT status, COUNT(*) FROM units GROUP BY status`, s.Units); err != nil {
		return s, err
	}
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
	rows, err := l.db.Query(`SELECT client, COALESCE(SUM(valid = 1), 0), COALESCE(SUM(valid = 0), 0), COALESCE(SUM(CASE WHEN valid = 1 THEN cpu_ms ELSE 0 END), 0)
		FROM results GROUP BY client ORDER BY 2 DESC, client`)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var c Credit
		var cpu int64
		if err := rows.Scan(&c.Client, &c.Valid, &c.Invalid, &cpu); err != nil {
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
	rows, err := l.db.Query(`SELECT r.cid, r.client, r.client_key, r.output, r.exit_code, r.error, r.cpu_ms, r.wall_ms, r.at, r.valid, u.idx, COALESCE(u.canonical, '')
		FROM results r JOIN jobs j ON j.cid = r.cid JOIN units u ON u.id = j.unit ORDER BY r.harvested, r.cid`)
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
		if err := rows.Scan(&r.CID, &r.Client, &r.ClientKey, &r.Output, &r.ExitCode, &r.Error, &cpu, &wall, &at, &valid, &idx, &canonical); err != nil {
			return err
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
