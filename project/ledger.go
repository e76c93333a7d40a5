package project

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite: the binary stays static
)

// Ledger is the project's durable record (SQLite, pure Go, so operators
// can query it with any SQLite tool): every batch submitted, its units and
// their jobs with the replicas that acknowledged them, every result
// harvested, its validation, and so each client's credit. Every write
// commits and syncs before it returns.
type Ledger struct {
	db   *sql.DB
	path string
}

const schema = `
CREATE TABLE IF NOT EXISTS batches(
	id      INTEGER PRIMARY KEY,
	digest  BLOB NOT NULL UNIQUE,
	source  TEXT NOT NULL,
	units   INTEGER NOT NULL,
	copies  INTEGER NOT NULL,
	created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS units(
	id        INTEGER PRIMARY KEY,
	batch     INTEGER NOT NULL REFERENCES batches(id),
	idx       INTEGER NOT NULL,
	copies    INTEGER NOT NULL,
	status    TEXT NOT NULL DEFAULT 'open',
	canonical TEXT,
	UNIQUE(batch, idx));
CREATE INDEX IF NOT EXISTS units_status ON units(status);
CREATE TABLE IF NOT EXISTS jobs(
	cid       TEXT PRIMARY KEY,
	unit      INTEGER NOT NULL REFERENCES units(id),
	copy      INTEGER NOT NULL,
	signed    BLOB NOT NULL,
	listing   BLOB NOT NULL,
	state     TEXT NOT NULL,
	acks      INTEGER NOT NULL DEFAULT 0,
	prepared  INTEGER NOT NULL,
	submitted INTEGER,
	collected INTEGER,
	UNIQUE(unit, copy));
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS results(
	cid        TEXT PRIMARY KEY REFERENCES jobs(cid),
	client     TEXT NOT NULL,
	client_key BLOB NOT NULL,
	output     BLOB NOT NULL,
	exit_code  INTEGER NOT NULL,
	error      TEXT NOT NULL,
	cpu_ms     INTEGER NOT NULL,
	wall_ms    INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	harvested  INTEGER NOT NULL,
	valid      INTEGER);
`

// Job states in the ledger.
const (
	StatePrepared  = "prepared"  // signed and recorded, not yet acknowledged by r replicas
	StateSubmitted = "submitted" // r replicas acknowledged
	StateHarvested = "harvested" // its result is in the ledger
	StateCollected = "collected" // the nodes were told
)

// OpenLedger opens (creating) the ledger at path.
func OpenLedger(path string) (*Ledger, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises anyway
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return &Ledger{db: db, path: path}, nil
}

// Close closes the ledger.
func (l *Ledger) Close() error { return l.db.Close() }

// DB is the underlying database, for reports.
func (l *Ledger) DB() *sql.DB { return l.db }

// Batch returns the batch with this digest, creating it; existed reports
// a re-run of the same submission.
func (l *Ledger) Batch(digest []byte, source string, units, copies int, now time.Time) (id int64, existed bool, err error) {
	err = l.db.QueryRow(`SELECT id FROM batches WHERE digest = ?`, digest).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("ledger batch: %w", err)
	}
	res, err := l.db.Exec(`INSERT INTO batches(digest, source, units, copies, created) VALUES(?,?,?,?,?)`,
		digest, source, units, copies, now.UnixMilli())
	if err != nil {
		return 0, false, fmt.Errorf("ledger batch: %w", err)
	}
	id, err = res.LastInsertId()
	return id, false, err
}

// PreparedJob is a signed job recorded before it is sent.
type PreparedJob struct {
	CID     string
	Unit    int64
	Copy    int
	Signed  []byte
	Listing []byte
}

// EnsureUnit returns the id of unit idx of a batch, creating it.
func (l *Ledger) EnsureUnit(batch int64, idx, copies int) (int64, error) {
	if _, err := l.db.Exec(`INSERT OR IGNORE INTO units(batch, idx, copies) VALUES(?,?,?)`, batch, idx, copies); err != nil {
		return 0, fmt.Errorf("ledger unit %d: %w", idx, err)
	}
	var id int64
	err := l.db.QueryRow(`SELECT id FROM units WHERE batch = ? AND idx = ?`, batch, idx).Scan(&id)
	return id, err
}

// Copies returns which copies of a unit have jobs.
func (l *Ledger) Copies(unit int64) (map[int]bool, error) {
	rows, err := l.db.Query(`SELECT copy FROM jobs WHERE unit = ?`, unit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var c int
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out[c] = true
	}
	return out, rows.Err()
}

// Prepare records signed jobs, in one transaction, before they are sent:
// a crash after this point re-sends the same jobs (same CIDs), never new
// ones.
func (l *Ledger) Prepare(jobs []PreparedJob, now time.Time) error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, j := range jobs {
		if _, err := tx.Exec(`INSERT INTO jobs(cid, unit, copy, signed, listing, state, prepared) VALUES(?,?,?,?,?,?,?)`,
			j.CID, j.Unit, j.Copy, j.Signed, j.Listing, StatePrepared, now.UnixMilli()); err != nil {
			return fmt.Errorf("ledger: record job %s: %w", j.CID, err)
		}
	}
	return tx.Commit()
}

// Pending lists the jobs of a batch (all batches when 0) not yet
// acknowledged by r replicas.
func (l *Ledger) Pending(batch int64) ([]PreparedJob, error) {
	q := `SELECT j.cid, j.unit, j.copy, j.signed, j.listing FROM jobs j JOIN units u ON u.id = j.unit WHERE j.state = ?`
	args := []any{StatePrepared}
	if batch != 0 {
		q += ` AND u.batch = ?`
		args = append(args, batch)
	}
	rows, err := l.db.Query(q+` ORDER BY j.rowid`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PreparedJob
	for rows.Next() {
		var j PreparedJob
		if err := rows.Scan(&j.CID, &j.Unit, &j.Copy, &j.Signed, &j.Listing); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// MarkSubmitted records jobs acknowledged by their replicas.
func (l *Ledger) MarkSubmitted(acks map[string]int, now time.Time) error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for cid, n := range acks {
		if _, err := tx.Exec(`UPDATE jobs SET state = ?, acks = ?, submitted = ? WHERE cid = ? AND state = ?`,
			StateSubmitted, n, now.UnixMilli(), cid, StatePrepared); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Known reports the ledger state of a job ("" when it is not the
// project's).
func (l *Ledger) Known(cid string) (string, error) {
	var st string
	err := l.db.QueryRow(`SELECT state FROM jobs WHERE cid = ?`, cid).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return st, err
}

// Result is a harvested result as the ledger keeps it.
type Result struct {
	CID       string
	Client    string // the client certificate's name
	ClientKey []byte
	Output    []byte
	ExitCode  int
	Error     string
	CPU, Wall time.Duration
	At        time.Time
	Valid     *bool
}

// RecordResults stores results durably (one synced transaction) and marks
// their jobs harvested. A result already recorded is kept, never doubled.
func (l *Ledger) RecordResults(rs []Result, now time.Time) error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, r := range rs {
		if _, err := tx.Exec(`INSERT OR IGNORE INTO results(cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested)
			VALUES(?,?,?,?,?,?,?,?,?,?)`, r.CID, r.Client, r.ClientKey, r.Output, r.ExitCode, r.Error,
			r.CPU.Milliseconds(), r.Wall.Milliseconds(), r.At.UnixMilli(), now.UnixMilli()); err != nil {
			return fmt.Errorf("ledger: record result of %s: %w", r.CID, err)
		}
		if _, err := tx.Exec(`UPDATE jobs SET state = ? WHERE cid = ? AND state IN (?, ?)`,
			StateHarvested, r.CID, StatePrepared, StateSubmitted); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// MarkCollected records that the nodes were told.
func (l *Ledger) MarkCollected(cids []string, now time.Time) error {
	if len(cids) == 0 {
		return nil
	}
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, c := range cids {
		if _, err := tx.Exec(`UPDATE jobs SET state = ?, collected = ? WHERE cid = ? AND state = ?`,
			StateCollected, now.UnixMilli(), c, StateHarvested); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Harvested lists jobs whose result is recorded but whose nodes were not
// yet told (a harvest stopped between the two).
func (l *Ledger) Harvested() ([]string, error) {
	return l.strings(`SELECT cid FROM jobs WHERE state = ?`, StateHarvested)
}

func (l *Ledger) strings(q string, args ...any) ([]string, error) {
	rows, err := l.db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// placeholders returns "?,?,...".
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }
