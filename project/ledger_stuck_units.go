package project

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/up-pool/up/job"
)

// StuckUnit is a unit without a canonical result long after its first
// job was prepared, with why as far as the ledger knows.
type StuckUnit struct {
	Unit   int64  `json:"unit"`   // the unit's id in the ledger
	Batch  string `json:"batch"`  // the job file it came from
	Index  int    `json:"index"`  // its index in the batch
	App    string `json:"app"`    // "" when its job does not decode
	Status string `json:"status"` // open or inconclusive
	// Job is a job of the unit still waiting for a result (else its
	// latest job): what `describe` is asked about.
	Job       string        `json:"job"`
	Copies    int           `json:"copies"`    // copies the job file asked for
	Issued    int           `json:"issued"`    // jobs issued, those declared lost included
	Prepared  int           `json:"prepared"`  // jobs not yet acknowledged by their replicas
	Submitted int           `json:"submitted"` // jobs acknowledged, without a result
	Lost      int           `json:"lost"`      // jobs declared lost
	Results   int           `json:"results"`   // results harvested
	Failed    int           `json:"failed"`    // of them, failed, killed or non-zero exits
	Age       time.Duration `json:"-"`         // since its first job was prepared; JSON age_s
	// Waiting is since the latest copy still without a result was
	// submitted (or prepared, when none was acknowledged); JSON waiting_s.
	Waiting time.Duration `json:"-"`
	// Unservable is how long no node could serve the result of one of
	// its finished jobs (0: none); JSON unservable_s.
	Unservable time.Duration `json:"-"`
	Reason     string        `json:"reason"`
}

// StuckUnits are the oldest stuck units and how many there are.
type StuckUnits struct {
	After float64     `json:"after_s"` // how old a unit without a canonical result must be, seconds
	Total int         `json:"total"`   // stuck units in the ledger
	Units []StuckUnit `json:"units"`   // the oldest, at most the limit asked
}

// qStuckUnits lists the units without a canonical result whose first job
// was prepared at ?1 or before, oldest first, at most ?2, with the total
// (a window over the groups, before the limit). The partial sums count
// jobs and results by kind; waiting is the latest submitted (else
// prepared) time of the jobs still without a result.
const qStuckUnits = `SELECT u.id, b.source, u.idx, u.status, u.copies, MIN(j.prepared),
	COUNT(j.cid), COALESCE(SUM(j.state = 'prepared'), 0), COALESCE(SUM(j.state = 'submitted'), 0), COALESCE(SUM(j.state = 'lost'), 0),
	COUNT(r.cid), COALESCE(SUM(r.exit_code != 0 OR r.error != ''), 0),
	MAX(CASE WHEN j.state IN ('prepared', 'submitted') THEN COALESCE(j.submitted, j.prepared) END),
	MIN(CASE WHEN j.state IN ('prepared', 'submitted') THEN j.unservable_since END),
	COUNT(*) OVER ()
	FROM units u JOIN batches b ON b.id = u.batch JOIN jobs j ON j.unit = u.id LEFT JOIN results r ON r.job = j.id
	WHERE u.status != 'valid' GROUP BY u.id HAVING MIN(j.prepared) <= ?1 ORDER BY MIN(j.prepared), u.id LIMIT ?2`

// StuckUnits reports the units without a canonical result whose first
// job was prepared more than after before now: the limit oldest, with a
// reason each, and how many there are. It reads the units not valid and
// their jobs: O(undecided jobs).
func (l *Ledger) StuckUnits(now time.Time, after time.Duration, limit int) (StuckUnits, error) {
	out := StuckUnits{After: after.Seconds(), Units: []StuckUnit{}}
	rows, err := l.db.Query(qStuckUnits, now.Add(-after).UnixMilli(), max(limit, 0))
	if err != nil {
		return out, fmt.Errorf("ledger: stuck units: %w", err)
	}
	for rows.Next() {
		var u StuckUnit
		var first int64
		var waiting, unservable sql.NullInt64
		if err := rows.Scan(&u.Unit, &u.Batch, &u.Index, &u.Status, &u.Copies, &first, &u.Issued, &u.Prepared, &u.Submitted, &u.Lost,
			&u.Results, &u.Failed, &waiting, &unservable, &out.Total); err != nil {
			rows.Close()
			return out, fmt.Errorf("ledger: stuck units: %w", err)
		}
		u.Age = now.Sub(time.UnixMilli(first))
		if waiting.Valid {
			u.Waiting = max(now.Sub(time.UnixMilli(waiting.Int64)), 0)
		}
		if unservable.Valid {
			u.Unservable = max(now.Sub(time.UnixMilli(unservable.Int64)), 0)
		}
		out.Units = append(out.Units, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("ledger: stuck units: %w", err)
	}
	for i := range out.Units {
		u := &out.Units[i]
		var signed []byte
		// A job still waiting first, else the latest: its app, and the
		// one to describe.
		err := l.db.QueryRow(`SELECT j.cid, s.signed FROM jobs j JOIN specs s ON s.job = j.id WHERE j.unit = ?
			ORDER BY j.state IN ('prepared', 'submitted') DESC, j.copy DESC LIMIT 1`,
			u.Unit).Scan(&u.Job, &signed)
		if err != nil {
			return out, fmt.Errorf("ledger: jobs of stuck unit %d: %w", u.Unit, err)
		}
		if _, spec, err := job.Decode(signed); err == nil {
			u.App = spec.App
		}
		u.Reason = u.reason()
	}
	return out, nil
}

// reason says why a unit has no canonical result, as far as the ledger
// knows: the most telling first.
func (u *StuckUnit) reason() string {
	ago := func(d time.Duration) string { return roundAge(d) + " ago" }
	pending, ok := u.Prepared+u.Submitted, u.Results-u.Failed
	disagree := u.Status == UnitInconclusive || (ok >= Quorum(u.Copies) && pending > 0)
	var parts []string
	switch {
	case disagree && pending > 0:
		parts = append(parts, fmt.Sprintf("copies disagree (%d results, no quorum): waiting for a tie-breaker", u.Results))
	case disagree:
		parts = append(parts, fmt.Sprintf("copies disagree (%d results, no quorum), no copy waiting: "+
			"the next harvest issues another, unless the unit has had its most copies (harvest --max-copies)", u.Results))
	case u.Results > 0 && pending > 0:
		parts = append(parts, fmt.Sprintf("%d of %d successful results: waiting for another copy", ok, Quorum(u.Copies)))
	}
	if u.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d %s failed", u.Failed, plural(u.Failed, "copy", "copies")))
	}
	if u.Lost > 0 {
		parts = append(parts, fmt.Sprintf("%d %s lost (no node could serve the result)", u.Lost, plural(u.Lost, "copy", "copies")))
	}
	switch {
	case u.Unservable > 0:
		parts = append(parts, fmt.Sprintf("finished, but no node has served the result for %s", roundAge(u.Unservable)))
	case u.Submitted > 0:
		parts = append(parts, fmt.Sprintf("submitted %s, no result", ago(u.Waiting)))
	case u.Prepared > 0:
		parts = append(parts, fmt.Sprintf("prepared %s, not acknowledged by its replicas: run 'up project submit' on %s again", ago(u.Waiting), u.Batch))
	case !disagree:
		parts = append(parts, "no copy waiting: the next harvest validates it")
	}
	return strings.Join(parts, "; ")
}

// roundAge writes d to the minute (to the second under a minute).
func roundAge(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	s := d.Round(time.Minute).String()
	return strings.TrimSuffix(s, "0s")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// MarshalJSON writes a stuck unit with its durations in seconds (age_s,
// waiting_s, unservable_s).
func (u StuckUnit) MarshalJSON() ([]byte, error) {
	type plain StuckUnit
	return json.Marshal(struct {
		plain
		Age        float64 `json:"age_s"`
		Waiting    float64 `json:"waiting_s"`
		Unservable float64 `json:"unservable_s"`
	}{plain(u), u.Age.Seconds(), u.Waiting.Seconds(), u.Unservable.Seconds()})
}
