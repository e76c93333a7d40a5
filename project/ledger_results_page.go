package project

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/job"
)

// MaxResultsPage bounds a page of ResultsPage.
const MaxResultsPage = 500

// ResultRow is a harvested result as a listing shows it: no output.
type ResultRow struct {
	Job    string `json:"job"`
	Unit   int64  `json:"unit"`  // the unit's id in the ledger
	Batch  string `json:"batch"` // the job file it came from
	Index  int    `json:"index"` // the unit's index in the batch
	Client string `json:"client"`
	// Grade is "valid", "invalid", "duplicate", or "" while its unit is
	// undecided.
	Grade     string        `json:"grade"`
	Canonical bool          `json:"canonical"` // its unit's canonical result
	ExitCode  int           `json:"exit_code"`
	Error     string        `json:"error"`
	Size      int           `json:"size"` // bytes of output, stdout and output files packed
	Files     []string      `json:"files"`
	CPU       time.Duration `json:"-"` // JSON cpu_s
	Wall      time.Duration `json:"-"` // JSON wall_s
	Harvested time.Time     `json:"-"` // JSON harvested, unix seconds
}

// MarshalJSON writes a result row with its durations in seconds (cpu_s,
// wall_s) and its harvest time in unix seconds (harvested).
func (r ResultRow) MarshalJSON() ([]byte, error) {
	type plain ResultRow
	return json.Marshal(struct {
		plain
		CPU       float64 `json:"cpu_s"`
		Wall      float64 `json:"wall_s"`
		Harvested float64 `json:"harvested"`
	}{plain(r), r.CPU.Seconds(), r.Wall.Seconds(), float64(r.Harvested.UnixMilli()) / 1000})
}

// ResultsPage is one page of the results, latest harvested first.
type ResultsPage struct {
	Total   int         `json:"total"`
	Offset  int         `json:"offset"`
	Results []ResultRow `json:"results"`
}

// gradeName names a results.valid value.
func gradeName(v sql.NullInt64) string {
	if !v.Valid {
		return ""
	}
	switch v.Int64 {
	case gradeValid:
		return "valid"
	case gradeDuplicate:
		return "duplicate"
	}
	return "invalid"
}

// ResultsPage lists up to limit (1 … MaxResultsPage) results after
// skipping offset, the latest recorded first (results are never
// deleted: their rowids follow the order they were recorded in).
func (l *Ledger) ResultsPage(offset, limit int) (ResultsPage, error) {
	limit, offset = min(max(limit, 1), MaxResultsPage), max(offset, 0)
	p := ResultsPage{Offset: offset, Results: []ResultRow{}}
	if err := l.db.QueryRow(`SELECT COUNT(*) FROM results`).Scan(&p.Total); err != nil {
		return p, fmt.Errorf("ledger: count results: %w", err)
	}
	rows, err := l.db.Query(`SELECT r.cid, j.unit, b.source, u.idx, r.client, r.valid, u.canonical IS r.cid, r.exit_code, r.error,
		length(r.output), r.cpu_ms, r.wall_ms, r.harvested, s.signed
		FROM results r CROSS JOIN jobs j ON j.id = r.job JOIN units u ON u.id = j.unit JOIN batches b ON b.id = u.batch JOIN specs s ON s.job = j.id
		ORDER BY r.rowid DESC LIMIT ? OFFSET ?`, limit, offset)
	if err != nil {
		return p, fmt.Errorf("ledger: results page: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r ResultRow
		var valid sql.NullInt64
		var cpu, wall, harvested int64
		var signed []byte
		if err := rows.Scan(&r.Job, &r.Unit, &r.Batch, &r.Index, &r.Client, &valid, &r.Canonical, &r.ExitCode, &r.Error,
			&r.Size, &cpu, &wall, &harvested, &signed); err != nil {
			return p, fmt.Errorf("ledger: results page: %w", err)
		}
		r.Grade = gradeName(valid)
		r.CPU, r.Wall, r.Harvested = time.Duration(cpu)*time.Millisecond, time.Duration(wall)*time.Millisecond, time.UnixMilli(harvested)
		r.Files = []string{}
		if _, spec, err := job.Decode(signed); err == nil && len(spec.Outputs) > 0 {
			r.Files = spec.Outputs
		}
		p.Results = append(p.Results, r)
	}
	return p, rows.Err()
}

// ErrNoResult reports a job the ledger holds no result of.
var ErrNoResult = errors.New("no result recorded for this job")

// qResultOf reads a job's result (?1 its CID) with its unit's index and
// its signed spec.
var qResultOf = `SELECT r.cid, r.client, r.client_key, r.output, r.exit_code, r.error, r.cpu_ms, r.wall_ms, r.at, r.valid = 1, r.killed, u.idx, s.signed
	FROM jobs j JOIN results r ON r.job = j.id JOIN units u ON u.id = j.unit JOIN specs s ON s.job = j.id WHERE ` + jobWithCID("j", "?1")

// ResultOf returns the result of a job, with the output file names its
// job names (OutputNames) and the unit's index; an error wrapping
// ErrNoResult when the ledger holds none.
func (l *Ledger) ResultOf(cid string) (r Result, unitIdx int, err error) {
	var cpu, wall, at int64
	var valid sql.NullBool
	var signed []byte
	if err := l.indexCIDs(); err != nil {
		return r, 0, err
	}
	err = l.db.QueryRow(qResultOf, cid).
		Scan(&r.CID, &r.Client, &r.ClientKey, &r.Output, &r.ExitCode, &r.Error, &cpu, &wall, &at, &valid, &r.Killed, &unitIdx, &signed)
	if errors.Is(err, sql.ErrNoRows) {
		return r, 0, fmt.Errorf("job %s: %w", cid, ErrNoResult)
	}
	if err != nil {
		return r, 0, fmt.Errorf("ledger: result of %s: %w", cid, err)
	}
	if _, spec, err := job.Decode(signed); err == nil {
		r.OutputNames = spec.Outputs
	}
	r.CPU, r.Wall, r.At = time.Duration(cpu)*time.Millisecond, time.Duration(wall)*time.Millisecond, time.UnixMilli(at)
	if valid.Valid {
		v := valid.Bool
		r.Valid = &v
	}
	return r, unitIdx, nil
}
