package project

import (
	"database/sql"
	"fmt"
	"time"
)

// jobs.unservable_since (ms since the epoch, the project's clock) is when
// a harvest first found that no node could serve a job's result (see
// judgeUnserved); NULL while none has, and again once its result is
// recorded or a node is found holding the job ready or claimed.
const (
	// ?1 now, ?2 [cid, ...], ?3 ?4 the states a job may be lost in.
	qMarkUnservable = `UPDATE jobs SET unservable_since = ?1
		WHERE ` + jobsIn2 + ` AND +state IN (?3, ?4) AND unservable_since IS NULL`
	// [cid, ...]
	qUnservableSince = `SELECT j.cid, j.unservable_since FROM json_each(?1) e CROSS JOIN jobs j ON ` + jobIsValue + `
		WHERE j.unservable_since IS NOT NULL AND +j.state IN (?2, ?3)`
	// [cid, ...]
	qClearUnservable = `UPDATE jobs SET unservable_since = NULL
		WHERE ` + jobsIn1 + ` AND unservable_since IS NOT NULL`
	// [cid, ...]: the unit of each job whose unit has no canonical result.
	qUnitsToReissue = `SELECT j.cid, j.unit FROM json_each(?1) e CROSS JOIN jobs j ON ` + jobIsValue + `
		JOIN units u ON u.id = j.unit WHERE u.status != ?2`
	qDeclareLost = `UPDATE jobs SET state = ?1 WHERE id IN (SELECT job FROM job_cids WHERE k = substr(?2, -16)) AND cid = ?2
		AND +state IN (?3, ?4) AND unservable_since IS NOT NULL`
	qNextCopy = `SELECT COALESCE(MAX(copy), 0) + 1 FROM jobs WHERE unit = ?`
)

// migrateUnservable adds jobs.unservable_since to a ledger written by a
// version without it (NULL for every job: no loss timer runs yet).
func migrateUnservable(db *sql.DB) error {
	var has bool
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'unservable_since')`).Scan(&has); err != nil {
		return fmt.Errorf("read the jobs table's columns: %w", err)
	}
	if has {
		return nil
	}
	if _, err := db.Exec(`ALTER TABLE jobs ADD COLUMN unservable_since INTEGER`); err != nil {
		return fmt.Errorf("add jobs.unservable_since: %w", err)
	}
	return nil
}

// Unservable records that no node could serve the results of cids at now
// (kept where recorded before: the time is the first such harvest's) and
// returns, per job of cids still without a result, since when. One synced
// transaction: the time survives a crash.
func (l *Ledger) Unservable(cids []string, now time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(cids) == 0 {
		return out, nil
	}
	list, err := jsonArg(cids)
	if err != nil {
		return nil, err
	}
	tx, err := l.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := l.fillCIDs(tx, 1); err != nil {
		return nil, err
	}
	if _, err := l.exec(tx, qMarkUnservable, now.UnixMilli(), list, StatePrepared, StateSubmitted); err != nil {
		return nil, fmt.Errorf("ledger: mark %d jobs unservable: %w", len(cids), err)
	}
	s, err := l.txStmt(tx, qUnservableSince)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(list, StatePrepared, StateSubmitted)
	if err != nil {
		return nil, fmt.Errorf("ledger: unservable since: %w", err)
	}
	for rows.Next() {
		var c string
		var ms int64
		if err := rows.Scan(&c, &ms); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: unservable since: %w", err)
		}
		out[c] = time.UnixMilli(ms)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, tx.Commit()
}

// ClearUnservable forgets that no node could serve the results of cids:
// a node holds them live again, so a later failure starts T_lost afresh.
func (l *Ledger) ClearUnservable(cids []string) error {
	if len(cids) == 0 {
		return nil
	}
	list, err := jsonArg(cids)
	if err != nil {
		return err
	}
	return l.lazyTx(func(tx *sql.Tx) error {
		if _, err := l.fillCIDs(tx, 1); err != nil {
			return err
		}
		_, err := l.exec(tx, qClearUnservable, list)
		return err
	})
}

// unitsToReissue returns the unit of each of cids whose unit has no
// canonical result yet: a lost job of such a unit needs another copy.
func (l *Ledger) unitsToReissue(cids []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(cids) == 0 {
		return out, nil
	}
	list, err := jsonArg(cids)
	if err != nil {
		return nil, err
	}
	if err := l.indexCIDs(); err != nil {
		return nil, err
	}
	rows, err := l.db.Query(qUnitsToReissue, list, UnitValid)
	if err != nil {
		return nil, fmt.Errorf("ledger: units of lost jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		var unit int64
		if err := rows.Scan(&c, &unit); err != nil {
			return nil, err
		}
		out[c] = unit
	}
	return out, rows.Err()
}

// lostJob is a job to declare lost, with the copy of its unit that
// replaces it (nil when the unit needs none).
type lostJob struct {
	cid  string
	copy *PreparedJob
}

// declareLost marks jobs lost and records their replacement copies
// (prepared, each numbered after its unit's highest copy), in one synced
// transaction: a crash after it leaves both for the next harvest and
// SubmitPending, a crash before it neither. A job is declared only while
// it is still without a result (prepared or submitted) and its
// unservable_since is set; it returns the CIDs declared.
func (l *Ledger) declareLost(jobs []lostJob, now time.Time) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	tx, err := l.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := l.fillCIDs(tx, 1); err != nil {
		return nil, err
	}
	next, err := l.txStmt(tx, qNextCopy)
	if err != nil {
		return nil, err
	}
	var declared []string
	for _, j := range jobs {
		res, err := l.exec(tx, qDeclareLost, StateLost, j.cid, StatePrepared, StateSubmitted)
		if err != nil {
			return nil, fmt.Errorf("ledger: declare job %s lost: %w", j.cid, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			continue // it got a result meanwhile, or was declared before
		}
		declared = append(declared, j.cid)
		if j.copy == nil {
			continue
		}
		if err := next.QueryRow(j.copy.Unit).Scan(&j.copy.Copy); err != nil {
			return nil, fmt.Errorf("ledger: next copy of unit %d: %w", j.copy.Unit, err)
		}
		if _, err := l.insertJobs(tx, []PreparedJob{*j.copy}, now); err != nil {
			return nil, err
		}
	}
	return declared, tx.Commit()
}
