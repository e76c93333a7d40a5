package project

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A ledger written before version 2026-12 keyed jobs and results by
// their CIDs (jobs.cid and results.cid TEXT PRIMARY KEY). A CID is a
// random key of 59 characters: each job and each result inserted landed
// on another page of its table's CID index, so every commit of a page of
// 64 jobs wrote pages all over two large indexes — most of what a job
// cost the ledger (BenchmarkLedgerFloor: 86–93 µs per job keyed by CID,
// 42–45 keyed by sequence with jobs_cid). migrateByID rebuilds such a
// ledger's two tables in the layout of jobsColumns and resultsColumns,
// the signed specs and listings moved to specs. A ledger of the version
// between (jobs keyed by id, specs still in their rows) gets its specs
// moved (migrateSpecs).

// migrateByID rebuilds the jobs and results tables of a ledger that keys
// them by CID (no jobs.id), in one transaction: a crash leaves the old
// tables whole, and the next open migrates again. Jobs keep their order
// (rowid), each result goes to its job's id; the indexes are made after
// (jobIndexes). Foreign keys are off on the connection while the tables
// are swapped (SQLite's way of rebuilding a table), and checked before
// the commit.
func migrateByID(db *sql.DB) (err error) {
	var keyed, specsIn bool
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'id'),
		EXISTS(SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'signed')`).Scan(&keyed, &specsIn); err != nil {
		return fmt.Errorf("read the jobs table's columns: %w", err)
	}
	if keyed {
		if specsIn {
			return migrateSpecs(db)
		}
		return nil
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return fmt.Errorf("key jobs by sequence: %w", err)
	}
	defer func() {
		if _, ferr := conn.ExecContext(ctx, `PRAGMA foreign_keys = ON`); ferr != nil {
			err = errors.Join(err, fmt.Errorf("key jobs by sequence: foreign keys on again: %w", ferr))
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	const (
		jobCols    = `cid, unit, copy, state, acks, prepared, submitted, collected, unservable_since`
		resultCols = `client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested, valid, killed, receipt`
	)
	for _, q := range []string{
		`CREATE TABLE jobs_by_id(` + jobsColumns + `)`,
		`INSERT INTO jobs_by_id(` + jobCols + `) SELECT ` + jobCols + ` FROM jobs ORDER BY rowid`,
		`CREATE UNIQUE INDEX jobs_cid ON jobs_by_id(substr(cid, -16))`,
		`INSERT INTO specs(job, signed, listing) SELECT n.id, o.signed, o.listing
			FROM jobs o CROSS JOIN jobs_by_id n ON substr(n.cid, -16) = substr(o.cid, -16) AND n.cid = o.cid ORDER BY n.id`,
		`CREATE TABLE results_by_id(` + resultsColumns + `)`,
		`INSERT INTO results_by_id(job, cid, ` + resultCols + `) SELECT j.id, r.cid, r.client, r.client_key, r.output, r.exit_code, r.error,
			r.cpu_ms, r.wall_ms, r.at, r.harvested, r.valid, r.killed, r.receipt
			FROM results r CROSS JOIN jobs_by_id j ON substr(j.cid, -16) = substr(r.cid, -16) AND j.cid = r.cid ORDER BY r.rowid`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("key jobs by sequence: %w", err)
		}
	}
	var lost int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM results) - (SELECT COUNT(*) FROM results_by_id)`).Scan(&lost); err != nil {
		return fmt.Errorf("key jobs by sequence: count the results: %w", err)
	}
	if lost != 0 {
		return fmt.Errorf("key jobs by sequence: %d results name no job; the ledger is left as it was", lost)
	}
	for _, q := range []string{
		`DROP TABLE results`,
		`DROP TABLE jobs`,
		`ALTER TABLE jobs_by_id RENAME TO jobs`,
		`ALTER TABLE results_by_id RENAME TO results`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("key jobs by sequence: %w", err)
		}
	}
	var bad int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&bad); err != nil {
		return fmt.Errorf("key jobs by sequence: check foreign keys: %w", err)
	}
	if bad != 0 {
		return fmt.Errorf("key jobs by sequence: %d rows would break a foreign key; the ledger is left as it was", bad)
	}
	return tx.Commit()
}

// migrateSpecs moves the signed specs and listings of a ledger whose
// jobs are keyed by id out of the jobs' rows into specs, in one
// transaction.
func migrateSpecs(db *sql.DB) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`INSERT INTO specs(job, signed, listing) SELECT id, signed, listing FROM jobs ORDER BY id`,
		`ALTER TABLE jobs DROP COLUMN signed`,
		`ALTER TABLE jobs DROP COLUMN listing`,
	} {
		if _, err := tx.Exec(q); err != nil {
			return fmt.Errorf("move the jobs' specs to their own table: %w", err)
		}
	}
	return tx.Commit()
}
