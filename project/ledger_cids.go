package project

import (
	"database/sql"
	"fmt"
)

// Jobs' CIDs are indexed in bulk (issue 23). A CID is a random key: an
// index of CIDs kept up to date by every insert (jobs_cid, before) took
// each job of a submission to another leaf page, so a synced commit of
// 100 jobs wrote some 60 index pages to the log on a ledger of 20,000
// jobs — more than the jobs' rows and specs together — and the share
// grows with the ledger. The process that records a job names it by id
// from then on (Ledger.known); only a lookup of a job it does not know
// (recorded by another process, or before a restart) needs the CID.
//
// So job_cids maps the last 16 characters of each CID (80 bits of its
// digest; a test's shorter name whole) to the job's id, and is filled a
// few thousand jobs at a time, in CID order (each leaf written once per
// fill, however many of the new keys land on it), in the transaction
// that records the job past cidsFillEvery unindexed ones; job_cids_upto
// holds the highest id indexed: every job up to it is in job_cids (ids
// only grow: a job's row is never deleted). A lookup by CID first fills
// the index when jobs are left above upto (fillCIDs), then reads it
// (jobWithCID): so a CID recorded by any process is found, the newest
// included. Two jobs whose CIDs share those 80 bits are both indexed
// (the key is the pair); the whole CID decides which is which.

// cidsFillEvery is how many jobs a ledger records between two fills of
// job_cids (when no lookup filled it first).
const cidsFillEvery = 4096

const cidsSchema = `
CREATE TABLE IF NOT EXISTS job_cids(
	k   TEXT NOT NULL,
	job INTEGER NOT NULL,
	PRIMARY KEY(k, job)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS job_cids_upto(
	one  INTEGER PRIMARY KEY CHECK (one = 1),
	upto INTEGER NOT NULL);
INSERT OR IGNORE INTO job_cids_upto(one, upto) VALUES(1, 0);
DROP INDEX IF EXISTS jobs_cid;
`

const (
	// qCIDsLeft counts the jobs above job_cids_upto.
	qCIDsLeft = `SELECT COALESCE((SELECT MAX(id) FROM jobs), 0) - upto FROM job_cids_upto`
	// qFillCIDs indexes the jobs above job_cids_upto, in key order.
	qFillCIDs = `INSERT OR IGNORE INTO job_cids(k, job)
		SELECT substr(cid, -16), id FROM jobs WHERE id > (SELECT upto FROM job_cids_upto) ORDER BY 1, 2`
	qMoveCIDsUpto = `UPDATE job_cids_upto SET upto = COALESCE((SELECT MAX(id) FROM jobs), 0)`
)

// cidQueries are the statements of the index's fill, prepared when the
// ledger opens (txQueries).
var cidQueries = []string{qCIDsLeft, qFillCIDs, qMoveCIDsUpto}

// jobWithCID is the condition that job j (an alias) has the CID x (an
// SQL expression): found through job_cids, decided by the whole CID.
func jobWithCID(j, x string) string {
	return j + `.id IN (SELECT c.job FROM job_cids c WHERE c.k = substr(` + x + `, -16)) AND ` + j + `.cid = ` + x
}

// fillCIDs indexes, in tx, the jobs above job_cids_upto when there are
// at least least of them (1: any); it reports whether it did.
func (l *Ledger) fillCIDs(tx *sql.Tx, least int64) (bool, error) {
	left, err := l.txStmt(tx, qCIDsLeft)
	if err != nil {
		return false, err
	}
	var n int64
	if err := left.QueryRow().Scan(&n); err != nil {
		return false, fmt.Errorf("ledger: jobs left out of the CID index: %w", err)
	}
	if n < max(least, 1) {
		return false, nil
	}
	if _, err := l.exec(tx, qFillCIDs); err != nil {
		return false, fmt.Errorf("ledger: index the CIDs of %d jobs: %w", n, err)
	}
	if _, err := l.exec(tx, qMoveCIDsUpto); err != nil {
		return false, fmt.Errorf("ledger: index the CIDs of %d jobs: %w", n, err)
	}
	return true, nil
}

// indexCIDs makes every job recorded so far findable by CID, in a
// transaction of its own when any is left out (a lookup outside a
// transaction calls it first).
func (l *Ledger) indexCIDs() error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	did, err := l.fillCIDs(tx, 1)
	if err != nil || !did {
		return err
	}
	return tx.Commit()
}
