package project

import (
	"database/sql"
	"fmt"
)

// trickleSchema is the table of the trickles the project recorded: per
// job, step and client, the progress a running sequence reported, the
// CPU time its client claimed for the step, and the partial credit the
// project granted for it. Created in place in an older ledger.
const trickleSchema = `
CREATE TABLE IF NOT EXISTS trickles(
	cid        TEXT NOT NULL,
	step       INTEGER NOT NULL,
	client     TEXT NOT NULL,
	client_key BLOB NOT NULL,
	progress   TEXT NOT NULL,
	cpu_ms     INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	harvested  INTEGER NOT NULL,
	credit     REAL NOT NULL,
	PRIMARY KEY(cid, step, client_key));`

// migrateTrickles creates the trickles table where it is missing.
func migrateTrickles(db *sql.DB) error {
	if _, err := db.Exec(trickleSchema); err != nil {
		return fmt.Errorf("trickles table: %w", err)
	}
	return nil
}

// Trickle is one recorded trickle.
type Trickle struct {
	CID       string
	Step      int
	Client    string
	ClientKey []byte
	Progress  string
	CPUMS     int64
	At        int64 // the client's time, Unix ms
	Credit    float64
}

// recordTrickle stores a trickle once (a trickle fetched again from
// another replica changes nothing) and reports whether it was new.
func (l *Ledger) recordTrickle(t Trickle, harvested int64) (bool, error) {
	res, err := l.db.Exec(`INSERT OR IGNORE INTO trickles(cid, step, client, client_key, progress, cpu_ms, at, harvested, credit)
		VALUES(?,?,?,?,?,?,?,?,?)`, t.CID, t.Step, t.Client, t.ClientKey, t.Progress, t.CPUMS, t.At, harvested, t.Credit)
	if err != nil {
		return false, fmt.Errorf("ledger: record trickle of job %s step %d: %w", t.CID, t.Step, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Trickles lists the trickles recorded for a job, by step.
func (l *Ledger) Trickles(cid string) ([]Trickle, error) {
	rows, err := l.db.Query(`SELECT cid, step, client, client_key, progress, cpu_ms, at, credit FROM trickles WHERE cid = ? ORDER BY step, client_key`, cid)
	if err != nil {
		return nil, fmt.Errorf("ledger: trickles of job %s: %w", cid, err)
	}
	defer rows.Close()
	var out []Trickle
	for rows.Next() {
		var t Trickle
		if err := rows.Scan(&t.CID, &t.Step, &t.Client, &t.ClientKey, &t.Progress, &t.CPUMS, &t.At, &t.Credit); err != nil {
			return nil, fmt.Errorf("ledger: trickles of job %s: %w", cid, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
