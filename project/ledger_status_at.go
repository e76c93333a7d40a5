package project

import (
	"database/sql"
	"fmt"
)

// units.status_at (ms since the epoch, the project's clock) is when a
// unit's status last changed (qSetStatus): for a valid unit, when it got
// its canonical result. NULL for a unit never validated (open since its
// jobs were prepared).
//
// A ledger written before the column gets it filled from the results it
// holds (qFillStatusAt): a valid unit from the harvest time of the
// quorum-th valid result (its verdict was recorded by the harvest that
// recorded that result, or by the next one), any other decided unit from
// its latest result; so the units-by-state timeline of an old ledger
// starts from its history, not from the upgrade.
const (
	qFillStatusAtValid = `UPDATE units SET status_at = (SELECT r.harvested FROM jobs j JOIN results r ON r.cid = j.cid
		WHERE j.unit = units.id AND r.valid = 1 ORDER BY r.harvested LIMIT 1 OFFSET %d)
		WHERE status = 'valid' AND %s`
	qFillStatusAtLatest = `UPDATE units SET status_at = (SELECT MAX(r.harvested) FROM jobs j JOIN results r ON r.cid = j.cid
		WHERE j.unit = units.id) WHERE status != 'open' AND status_at IS NULL`
)

// migrateStatusAt adds units.status_at to a ledger without it, filled
// from the results it holds (see above), in one transaction.
func migrateStatusAt(db *sql.DB) error {
	var has bool
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 FROM pragma_table_info('units') WHERE name = 'status_at')`).Scan(&has); err != nil {
		return fmt.Errorf("read the units table's columns: %w", err)
	}
	if has {
		return nil
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`ALTER TABLE units ADD COLUMN status_at INTEGER`); err != nil {
		return fmt.Errorf("add units.status_at: %w", err)
	}
	for _, q := range []string{
		fmt.Sprintf(qFillStatusAtValid, 0, "copies < 2"),  // quorum 1: the first valid result
		fmt.Sprintf(qFillStatusAtValid, 1, "copies >= 2"), // quorum 2: the second
		qFillStatusAtLatest,
	} {
		if _, err := tx.Exec(q); err != nil {
			return fmt.Errorf("fill units.status_at: %w", err)
		}
	}
	return tx.Commit()
}
