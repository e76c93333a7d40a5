package project

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/result"
)

// Result is a harvested result as the ledger keeps it: every result a
// client returned, error exits and limit kills included (BOINC keeps error
// results too); validation counts a failed one as not valid.
type Result struct {
	CID       string
	Client    string // the client certificate's name
	ClientKey []byte
	Output    []byte // may be empty (stored as an empty blob)
	ExitCode  int
	Error     string // why the job failed or was killed; empty on success
	Killed    string // the limit that killed the job ("memory limit", ...), "" if none; default: the one Error names
	CPU, Wall time.Duration
	At        time.Time
	Valid     *bool
	// OutputNames are the output files its job's spec names (EachResult
	// fills them): with some, Output is job.PackOutputs' encoding.
	OutputNames []string
	// Salt is the commitment's salt the sealed record carried (results of
	// commit–reveal jobs, checked by a harvest against the commitment:
	// reveal.go); not stored.
	Salt []byte
}

// ErrResultConflict reports a job whose result the ledger already holds
// from another client.
var ErrResultConflict = errors.New("job already has another client's result")

// RecordResults stores results durably (one synced transaction) and marks
// their jobs harvested. Recording a job's result again from the same
// client is a no-op; one from another client is an error wrapping
// ErrResultConflict, and then none of rs is recorded. A unit of one copy
// whose first result this is and succeeded is decided valid at once
// (ledger_decide.go); every other result's unit is queued for
// validation (to_validate); both in the same transaction.
func (l *Ledger) RecordResults(rs []Result, now time.Time) error {
	_, err := l.recordResults(rs, now, true)
	return err
}

// recordResults is RecordResults, returning how many units it decided;
// with decide false it queues every unit, as a ledger did before units
// of one copy were decided on record (tests of verdicts that come later
// than their results use it).
func (l *Ledger) recordResults(rs []Result, now time.Time, decide bool) (decided int, err error) {
	if len(rs) == 0 {
		return 0, nil
	}
	tx, err := l.db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	cids := make([]string, len(rs))
	for i, r := range rs {
		cids[i] = r.CID
	}
	facts, err := l.factsOf(tx, cids)
	if err != nil {
		return 0, err
	}
	ins, err := l.txStmt(tx, qInsertResult)
	if err != nil {
		return 0, err
	}
	insValid, err := l.txStmt(tx, qInsertValidResult)
	if err != nil {
		return 0, err
	}
	at := now.UnixMilli()
	var conflicts []error
	var verdicts []*recordFacts
	queue := make([]jobRef, 0, len(rs))
	ids := make([]int64, 0, len(rs))
	for i := range rs {
		r := &rs[i]
		f := facts[r.CID]
		if f == nil {
			return 0, fmt.Errorf("ledger: result of job %s from client %q: no such job in the ledger", r.CID, r.Client)
		}
		ids = append(ids, f.job)
		if f.resultKey != nil {
			if !bytes.Equal(f.resultKey, r.ClientKey) {
				conflicts = append(conflicts, fmt.Errorf("ledger: result of job %s from client %q: %w", r.CID, r.Client, ErrResultConflict))
			}
			queue = append(queue, jobRef{id: f.job, cid: r.CID})
			continue
		}
		out := r.Output
		if out == nil {
			out = []byte{} // NULL would break output's NOT NULL
		}
		killed := r.Killed
		if killed == "" {
			killed = result.KilledBy(r.Error)
		}
		stmt := ins
		if decide {
			decideOnRecord(f, r)
		}
		if f.verdict != nil {
			stmt = insValid
			verdicts = append(verdicts, f)
		} else {
			queue = append(queue, jobRef{id: f.job, cid: r.CID})
		}
		if _, err := stmt.Exec(f.job, r.CID, r.Client, r.ClientKey, out, r.ExitCode, r.Error,
			r.CPU.Milliseconds(), r.Wall.Milliseconds(), r.At.UnixMilli(), at, killed); err != nil {
			return 0, fmt.Errorf("ledger: record result of %s: %w", r.CID, err)
		}
		f.resultKey = r.ClientKey
		if f.resultKey == nil {
			f.resultKey = []byte{}
		}
	}
	if len(conflicts) > 0 {
		return 0, errors.Join(conflicts...)
	}
	idList, err := jsonArg(ids)
	if err != nil {
		return 0, err
	}
	if _, err := l.exec(tx, qMarkHarvested, StateHarvested, idList, StatePrepared, StateSubmitted); err != nil {
		return 0, err
	}
	if err := l.recordVerdicts(tx, verdicts, queue, now); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return len(verdicts), nil
}

// migrate brings a ledger written by an older version up to the schema:
// results.killed, filled from the error text of the results it holds,
// jobs.unservable_since (migrateUnservable) and units.status_at
// (migrateStatusAt), and jobs and results keyed by sequence
// (migrateByID).
func migrate(db *sql.DB) error {
	if err := migrateKilled(db); err != nil {
		return err
	}
	if err := migrateUnservable(db); err != nil {
		return err
	}
	if err := migrateReceipts(db); err != nil {
		return err
	}
	if err := migrateTrickles(db); err != nil {
		return err
	}
	if err := migrateAdaptive(db); err != nil {
		return err
	}
	if err := migrateStatusAt(db); err != nil {
		return err
	}
	return migrateByID(db) // last: the migrations above read the tables as they were
}

// migrateKilled adds results.killed to a ledger without it, filled from
// the error text of the results it holds.
func migrateKilled(db *sql.DB) error {
	var has bool
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 FROM pragma_table_info('results') WHERE name = 'killed')`).Scan(&has); err != nil {
		return fmt.Errorf("read the results table's columns: %w", err)
	}
	if has {
		return nil
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`ALTER TABLE results ADD COLUMN killed TEXT NOT NULL DEFAULT ''`); err != nil {
		return fmt.Errorf("add results.killed: %w", err)
	}
	n := len(result.KilledPrefix)
	if _, err := tx.Exec(`UPDATE results SET killed = substr(error, ?) WHERE substr(error, 1, ?) = ?`, n+1, n, result.KilledPrefix); err != nil {
		return fmt.Errorf("fill results.killed: %w", err)
	}
	return tx.Commit()
}
