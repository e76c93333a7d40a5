package project

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite: the binary stays static

	"github.com/up-pool/up/job"
)

// Ledger is the project's durable record (SQLite, pure Go, so operators
// can query it with any SQLite tool): every batch submitted, its units and
// their jobs with the replicas that acknowledged them, every result
// harvested, its validation, and so each client's credit.
//
// Every write commits before it returns, and what the network is told of
// is synced to disk first: a job is recorded (Prepare) before it is sent,
// a result (RecordResults) before its nodes are told it is collected. The
// bookkeeping that follows — acknowledgements (MarkSubmitted), collected
// marks (MarkCollected) and a harvest's verdicts — commits without waiting
// for the disk (lazyTx: SQLite's synchronous=NORMAL, in WAL mode), which
// costs a fraction of a synced commit. A crash of the process loses none
// of it; a power cut may lose the last of it, never out of order (the next
// synced commit syncs it too); and losing it costs only a re-send: the
// same jobs submitted again (a node keeps one copy of a CID), the same
// jobs confirmed collected again, units validated again (a unit stays
// queued until its verdict commits).
//
// The statements of the hot paths (submit, harvest) are prepared once per
// ledger (stmt): SQLite's parser costs more than most of them take to run.
type Ledger struct {
	db   *sql.DB
	path string

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// plain holds the CIDs of jobs this process recorded (or tried to:
	// a rolled-back insert leaves its note) whose specs cannot ask for
	// commit–reveal (job.CannotUseCommit): a harvest reads no spec from
	// the ledger for them (jobSpecs). A CID names its signed bytes, so
	// an entry is true forever; each is dropped when
	// consulted, and all when maxPlain are held (the jobs never
	// harvested would otherwise stay: their harvest, if any, reads the
	// ledger as before).
	plain map[string]struct{}
	// known maps the CID of each job this process recorded to its id
	// (ledger_refs.go), until the job is collected; at most maxKnown.
	known map[string]int64
}

// maxPlain bounds Ledger.plain (~100 bytes an entry: ~7 MB), a window of
// jobs in flight larger than most projects keep.
const maxPlain = 1 << 16

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
	status_at INTEGER,
	UNIQUE(batch, idx));
CREATE INDEX IF NOT EXISTS units_status ON units(status);
CREATE TABLE IF NOT EXISTS jobs(` + jobsColumns + `);
CREATE TABLE IF NOT EXISTS specs(` + specsColumns + `);
CREATE TABLE IF NOT EXISTS results(` + resultsColumns + `);
CREATE TABLE IF NOT EXISTS to_validate(
	unit INTEGER PRIMARY KEY REFERENCES units(id));
CREATE TABLE IF NOT EXISTS blobs(
	key       BLOB PRIMARY KEY,
	manifest  BLOB NOT NULL,
	created   INTEGER NOT NULL,
	withdrawn INTEGER);
CREATE TABLE IF NOT EXISTS unit_blobs(
	unit INTEGER NOT NULL REFERENCES units(id),
	key  BLOB NOT NULL REFERENCES blobs(key),
	PRIMARY KEY(unit, key));
CREATE INDEX IF NOT EXISTS unit_blobs_key ON unit_blobs(key);
`

// jobsColumns, specsColumns and resultsColumns define the jobs, specs
// and results tables (their own constants: migrateByID builds them under
// other names). A job is keyed by a sequence (id), in the order it was
// recorded; a result by its rowid, in the order it was recorded, and
// found by its job's id (unique): rows and index entries are appended,
// not placed by a random key. A job's signed spec and listing (~0.4 KB
// each) are a row of specs, written once: a job's row, rewritten at each
// change of its state, stays ~0.1 KB, so a page of jobs changing state
// rewrites a few database pages, not one per few jobs.
const (
	jobsColumns = `
	id        INTEGER PRIMARY KEY,
	cid       TEXT NOT NULL,
	unit      INTEGER NOT NULL REFERENCES units(id),
	copy      INTEGER NOT NULL,
	state     TEXT NOT NULL,
	acks      INTEGER NOT NULL DEFAULT 0,
	prepared  INTEGER NOT NULL,
	submitted INTEGER,
	collected INTEGER,
	unservable_since INTEGER,
	UNIQUE(unit, copy)`
	specsColumns = `
	job     INTEGER PRIMARY KEY REFERENCES jobs(id),
	signed  BLOB NOT NULL,
	listing BLOB NOT NULL`
	resultsColumns = `
	job        INTEGER NOT NULL UNIQUE REFERENCES jobs(id),
	cid        TEXT NOT NULL,
	client     TEXT NOT NULL,
	client_key BLOB NOT NULL,
	output     BLOB NOT NULL,
	exit_code  INTEGER NOT NULL,
	error      TEXT NOT NULL,
	cpu_ms     INTEGER NOT NULL,
	wall_ms    INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	harvested  INTEGER NOT NULL,
	valid      INTEGER,
	killed     TEXT NOT NULL DEFAULT '',
	receipt    INTEGER`
)

// jobIndexes are the indexes of the jobs and results tables (created
// after migrateByID, which rebuilds an older ledger's tables). A job is
// found by its CID through job_cids, filled in bulk (ledger_cids.go).
const jobIndexes = `
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS results_ungraded ON results(job) WHERE valid IS NULL;
CREATE INDEX IF NOT EXISTS results_client ON results(client_key, harvested);
CREATE INDEX IF NOT EXISTS results_unreceipted ON results(client_key, harvested) WHERE valid = 1 AND receipt IS NULL;
`

// to_validate holds the units a harvest has to look at: every unit a
// result was recorded for since it was last validated (RecordResults adds
// it in the same transaction), so a harvest pass touches only the units of
// new results, not every unit of the ledger. A pass drops a unit once its
// verdict can change only by a new result. OpenLedger adds every unit
// with a result not yet graded (cheap: a partial index), which covers a
// ledger written by a version without the table.
const (
	unqueuedUngraded = `FROM results r INDEXED BY results_ungraded CROSS JOIN jobs j ON j.id = r.job
		WHERE r.valid IS NULL AND j.unit NOT IN (SELECT unit FROM to_validate)`
	seedToValidate = `INSERT INTO to_validate(unit) SELECT DISTINCT j.unit ` + unqueuedUngraded + ` ON CONFLICT(unit) DO NOTHING`
)

// seed queues the units of ungraded results that are not queued; it
// writes only when there are some.
func seed(db *sql.DB) error {
	var some bool
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 ` + unqueuedUngraded + `)`).Scan(&some); err != nil || !some {
		return err
	}
	_, err := db.Exec(seedToValidate)
	return err
}

// No statement uses INSERT OR IGNORE, which drops a row for any
// constraint it breaks (a NULL in a NOT NULL column too): a unit already
// queued in to_validate, or a unit EnsureUnit finds, is named as the one
// conflict that is no error (ON CONFLICT(...) DO NOTHING); a result
// already recorded is checked for explicitly (RecordResults).
//
// Statements run in transactions: prepared when the ledger opens, as one
// prepared in a transaction would wait for the connection the
// transaction holds. Those that change many rows take them as one JSON
// array (json_each): one statement per transaction, not one per row.
// A job is found by its CID as jobIndexes says: jobIsValue joins a
// JSON array's element to its job, jobsIn1 and jobsIn2 select the
// jobs of the array bound to ?1 and ?2; the hot paths find jobs by id
// instead (jobIsRef, ledger_refs.go).
// "+state" keeps SQLite from walking the jobs of a state (jobs_state),
// which may be most of the ledger, rather than looking each job up.
const (
	jobIsValue = `j.id IN (SELECT c.job FROM job_cids c WHERE c.k = substr(e.value, -16)) AND j.cid = e.value`
	jobsIn1    = `id IN (SELECT c.job FROM json_each(?1) e CROSS JOIN job_cids c ON c.k = substr(e.value, -16)) AND cid IN (SELECT value FROM json_each(?1))`
	jobsIn2    = `id IN (SELECT c.job FROM json_each(?2) e CROSS JOIN job_cids c ON c.k = substr(e.value, -16)) AND cid IN (SELECT value FROM json_each(?2))`

	qInsertBatch = `INSERT INTO batches(digest, source, units, copies, created) VALUES(?,?,?,?,?)`
	qEnsureUnit  = `INSERT INTO units(batch, idx, copies) VALUES(?,?,?) ON CONFLICT(batch, idx) DO NOTHING`
	qUnitID      = `SELECT id, copies FROM units WHERE batch = ? AND idx = ?`
	qInsertJob   = `INSERT INTO jobs(cid, unit, copy, state, prepared) VALUES(?,?,?,?,?)`
	qInsertSpec  = `INSERT INTO specs(job, signed, listing) VALUES(?,?,?)`
	qInsertUnit  = `INSERT INTO units(batch, idx, copies) VALUES(?,?,?)`
	// {cid: id, ...} (refsArg), ?5 their acknowledgements
	qMarkSubmitted = `UPDATE jobs SET state = ?1, acks = ?5, submitted = ?2
		FROM json_each(?3) e WHERE jobs.id = e.value AND jobs.cid = e.key AND +jobs.state = ?4`
	qInsertResult = `INSERT INTO results(job, cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested, killed)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?)`
	// qInsertResult for a result graded valid as it is recorded
	// (decideOnRecord).
	qInsertValidResult = `INSERT INTO results(job, cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested, killed, valid)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?,1)`
	// [job id, ...]: the ids qRecordFacts found.
	qMarkHarvested = `UPDATE jobs SET state = ?1, unservable_since = NULL WHERE id IN (SELECT value FROM json_each(?2)) AND +state IN (?3, ?4)`
	// {cid: id, ...}
	qQueueUnits = `INSERT INTO to_validate(unit) SELECT j.unit FROM json_each(?) e CROSS JOIN jobs j ON ` + jobIsRef + `
		WHERE true ON CONFLICT(unit) DO NOTHING`
	// {cid: id, ...}
	qMarkCollected = `UPDATE jobs SET state = ?1, collected = ?2
		FROM json_each(?3) e WHERE jobs.id = e.value AND jobs.cid = e.key AND +jobs.state = ?4`
	// ?1 a status, ?2 now, ?3 {canonical: unit, ...}: status_at moves
	// only when the status changes. (An object: json_each gives each
	// member's key and value as they are, where e.value->>N parses an
	// element again for each field.)
	qSetStatus = `UPDATE units SET status = ?1, canonical = e.key,
		status_at = CASE WHEN units.status = ?1 THEN units.status_at ELSE ?2 END
		FROM json_each(?3) e WHERE units.id = e.value`
	// qSetStatus for units without a canonical result: ?3 [unit, ...].
	qSetStatusNone = `UPDATE units SET status = ?1, canonical = NULL,
		status_at = CASE WHEN units.status = ?1 THEN units.status_at ELSE ?2 END
		FROM json_each(?3) e WHERE units.id = e.value`
	// [[cid, 0 or 1], ...]: the jobs looked up first (MATERIALIZED), as
	// SQLite would rather walk the results and match each to the list.
	qGrade = `WITH g AS MATERIALIZED (SELECT j.id AS id, e.value->>1 AS valid FROM json_each(?) e CROSS JOIN jobs j
		ON j.id IN (SELECT c.job FROM job_cids c WHERE c.k = substr(e.value->>0, -16)) AND j.cid = e.value->>0)
		UPDATE results SET valid = g.valid FROM g WHERE results.job = g.id`
	// [[unit, results], ...]: each unit leaves to_validate unless it has
	// another number of results by now.
	qUnqueueUnits = `DELETE FROM to_validate WHERE unit IN (SELECT e.value->>0 FROM json_each(?) e
		WHERE (SELECT COUNT(*) FROM jobs j JOIN results r ON r.job = j.id WHERE j.unit = e.value->>0) = e.value->>1)`
)

var txQueries = []string{qInsertBatch, qEnsureUnit, qUnitID, qInsertJob, qInsertSpec, qInsertUnit, qMarkSubmitted, qInsertResult, qInsertValidResult, qRecordFacts,
	qMarkHarvested, qQueueUnits, qMarkCollected, qSetStatus, qSetStatusNone, qGrade, qUnqueueUnits,
	qInsertAdaptive, qDecideAdaptive}

// jsonArg is v as a JSON array argument of a statement.
func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Job states in the ledger.
const (
	StatePrepared  = "prepared"  // signed and recorded, not yet acknowledged by r replicas
	StateSubmitted = "submitted" // r replicas acknowledged
	StateHarvested = "harvested" // its result is in the ledger
	StateCollected = "collected" // the nodes were told
	// StateLost: no node could serve its result for HarvestOptions.LostAfter;
	// its unit got another copy and its nodes are told it is collected.
	StateLost = "lost"
)

// OpenLedger opens (creating) the ledger at path.
func OpenLedger(path string) (*Ledger, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises anyway
	db.SetMaxIdleConns(1) // and keep it, with its prepared statements
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if _, err := db.Exec(jobIndexes); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if _, err := db.Exec(cidsSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: the CID index: %w", path, err)
	}
	if err := seed(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: queue the units of ungraded results: %w", path, err)
	}
	l := &Ledger{db: db, path: path, stmts: map[string]*sql.Stmt{}}
	for _, q := range slices.Concat(txQueries, creditTxQueries, cidQueries) {
		if _, err := l.stmt(q); err != nil {
			l.Close()
			return nil, fmt.Errorf("ledger %s: %w", path, err)
		}
	}
	// Index the jobs recorded since the last fill (all of them the first
	// time: job_cids replaces jobs_cid).
	if err := l.indexCIDs(); err != nil {
		l.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return l, nil
}

// Close closes the ledger.
func (l *Ledger) Close() error {
	l.mu.Lock()
	for q, s := range l.stmts {
		s.Close()
		delete(l.stmts, q)
	}
	l.mu.Unlock()
	return l.db.Close()
}

// stmt returns the prepared statement of q, preparing it on first use;
// not in a transaction (see txQueries).
func (l *Ledger) stmt(q string) (*sql.Stmt, error) {
	l.mu.Lock()
	s, ok := l.stmts[q]
	l.mu.Unlock()
	if ok {
		return s, nil
	}
	// Not under l.mu: Prepare waits for the connection, which another
	// goroutine's transaction may hold while it calls txStmt.
	s, err := l.db.Prepare(q)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if had, ok := l.stmts[q]; ok {
		s.Close()
		return had, nil
	}
	l.stmts[q] = s
	return s, nil
}

// txStmt returns q prepared, bound to tx: the statement prepared at open
// (txQueries), else one prepared in tx for tx.
func (l *Ledger) txStmt(tx *sql.Tx, q string) (*sql.Stmt, error) {
	l.mu.Lock()
	s, ok := l.stmts[q]
	l.mu.Unlock()
	if !ok {
		return tx.Prepare(q)
	}
	return tx.Stmt(s), nil
}

// txQuery runs the query q in tx, prepared once.
func (l *Ledger) txQuery(tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	s, err := l.txStmt(tx, q)
	if err != nil {
		return nil, err
	}
	return s.Query(args...)
}

// exec runs q with each args, in tx, prepared once.
func (l *Ledger) exec(tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	s, err := l.txStmt(tx, q)
	if err != nil {
		return nil, err
	}
	return s.Exec(args...)
}

// lazyTx runs f in a transaction whose commit does not wait for the disk
// (see Ledger): on the one connection, synchronous is NORMAL for it and
// FULL again before any other statement runs there.
func (l *Ledger) lazyTx(f func(tx *sql.Tx) error) (err error) {
	ctx := context.Background()
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return err
	}
	defer func() {
		if _, rerr := conn.ExecContext(ctx, "PRAGMA synchronous = FULL"); rerr != nil {
			// Never hand the connection on unsynced: close it.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			err = errors.Join(err, fmt.Errorf("ledger: restore synchronous commits: %w", rerr))
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// DB is the underlying database, for reports.
func (l *Ledger) DB() *sql.DB { return l.db }

// Batch returns the batch with this digest, creating it; existed reports
// a re-run of the same submission.
func (l *Ledger) Batch(digest []byte, source string, units, copies int, now time.Time) (id int64, existed bool, err error) {
	if id, err = l.findBatch(digest); err != nil || id != 0 {
		return id, id != 0, err
	}
	tx, err := l.db.Begin()
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	if id, err = l.insertBatch(tx, digest, source, units, copies, now); err != nil {
		return 0, false, err
	}
	return id, false, tx.Commit()
}

// findBatch returns the id of the batch with this digest, 0 when none.
func (l *Ledger) findBatch(digest []byte) (int64, error) {
	s, err := l.stmt(`SELECT id FROM batches WHERE digest = ?`)
	if err != nil {
		return 0, err
	}
	var id int64
	if err := s.QueryRow(digest).Scan(&id); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("ledger batch: %w", err)
	}
	return id, nil
}

func (l *Ledger) insertBatch(tx *sql.Tx, digest []byte, source string, units, copies int, now time.Time) (int64, error) {
	res, err := l.exec(tx, qInsertBatch,
		digest, source, units, copies, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("ledger batch: %w", err)
	}
	return res.LastInsertId()
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
	tx, err := l.db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := l.exec(tx, qEnsureUnit, batch, idx, copies); err != nil {
		return 0, fmt.Errorf("ledger unit %d: %w", idx, err)
	}
	s, err := l.txStmt(tx, qUnitID)
	if err != nil {
		return 0, err
	}
	var id int64
	var had int
	if err := s.QueryRow(batch, idx).Scan(&id, &had); err != nil {
		return 0, fmt.Errorf("ledger unit %d: %w", idx, err)
	}
	if had != copies {
		return 0, fmt.Errorf("ledger unit %d of batch %d: has %d copies, asked %d", idx, batch, had, copies)
	}
	return id, tx.Commit()
}

// Copies returns which copies of a unit have jobs.
func (l *Ledger) Copies(unit int64) (map[int]bool, error) {
	s, err := l.stmt(`SELECT copy FROM jobs WHERE unit = ?`)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(unit)
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

// batchUnits returns the units a batch has in the ledger (by index) and
// which copies of each have jobs: what a re-run of its submission finds.
func (l *Ledger) batchUnits(batch int64) (ids map[int]int64, copies map[int64]map[int]bool, err error) {
	s, err := l.stmt(`SELECT u.idx, u.id, j.copy FROM units u LEFT JOIN jobs j ON j.unit = u.id WHERE u.batch = ?`)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.Query(batch)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	ids, copies = map[int]int64{}, map[int64]map[int]bool{}
	for rows.Next() {
		var idx int
		var id int64
		var c sql.NullInt64
		if err := rows.Scan(&idx, &id, &c); err != nil {
			return nil, nil, err
		}
		ids[idx] = id
		if c.Valid {
			if copies[id] == nil {
				copies[id] = map[int]bool{}
			}
			copies[id][int(c.Int64)] = true
		}
	}
	return ids, copies, rows.Err()
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
	refs, err := l.insertJobs(tx, jobs, now)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	l.noteKnown(refs)
	return nil
}

func (l *Ledger) insertJobs(tx *sql.Tx, jobs []PreparedJob, now time.Time) ([]jobRef, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ins, err := l.txStmt(tx, qInsertJob)
	if err != nil {
		return nil, err
	}
	insSpec, err := l.txStmt(tx, qInsertSpec)
	if err != nil {
		return nil, err
	}
	refs := make([]jobRef, len(jobs))
	at := now.UnixMilli()
	for i, j := range jobs {
		res, err := ins.Exec(j.CID, j.Unit, j.Copy, StatePrepared, at)
		if err != nil {
			return nil, fmt.Errorf("ledger: record job %s: %w", j.CID, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("ledger: record job %s: %w", j.CID, err)
		}
		if _, err := insSpec.Exec(id, j.Signed, j.Listing); err != nil {
			return nil, fmt.Errorf("ledger: record the spec of job %s: %w", j.CID, err)
		}
		refs[i] = jobRef{id: id, cid: j.CID}
	}
	if _, err := l.fillCIDs(tx, cidsFillEvery); err != nil {
		return nil, err
	}
	l.notePlain(jobs)
	return refs, nil
}

// notePlain adds to l.plain the jobs whose specs cannot use commit–reveal.
func (l *Ledger) notePlain(jobs []PreparedJob) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.plain == nil {
		l.plain = map[string]struct{}{}
	}
	for _, j := range jobs {
		if len(l.plain) >= maxPlain {
			clear(l.plain)
		}
		if job.CannotUseCommit(j.Signed) {
			l.plain[j.CID] = struct{}{}
		}
	}
}

// takePlain returns those of cids that are not in l.plain, and drops
// from it those that are.
func (l *Ledger) takePlain(cids []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := cids[:0:0]
	for _, c := range cids {
		if _, ok := l.plain[c]; ok {
			delete(l.plain, c)
			continue
		}
		rest = append(rest, c)
	}
	return rest
}

// batchRecord is a batch being recorded: created with its first jobs.
type batchRecord struct {
	id            int64 // 0 until the batch is in the ledger
	digest        []byte
	source        string
	units, copies int
	unitIDs       map[int]int64 // unit index → id, of the units in the ledger
}

// unitJob is a prepared job of the unit of index idx; adaptive marks a
// unit of adaptive replication (recorded with the unit).
type unitJob struct {
	idx      int
	adaptive bool
	PreparedJob
}

// record stores jobs in one synced transaction, with the batch (when not
// yet in the ledger) and the units they are the first of; it fills in
// b.id, b.unitIDs and each job's Unit.
func (l *Ledger) record(b *batchRecord, jobs []unitJob, now time.Time) error {
	tx, err := l.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	id := b.id
	if id == 0 {
		if id, err = l.insertBatch(tx, b.digest, b.source, b.units, b.copies, now); err != nil {
			return err
		}
	}
	insUnit, err := l.txStmt(tx, qInsertUnit)
	if err != nil {
		return err
	}
	created := map[int]int64{}
	rows := make([]PreparedJob, len(jobs))
	for i, j := range jobs {
		unit, ok := b.unitIDs[j.idx]
		if !ok {
			if unit, ok = created[j.idx]; !ok {
				res, err := insUnit.Exec(id, j.idx, b.copies)
				if err != nil {
					return fmt.Errorf("ledger unit %d: %w", j.idx, err)
				}
				if unit, err = res.LastInsertId(); err != nil {
					return err
				}
				if j.adaptive {
					if _, err := l.exec(tx, qInsertAdaptive, unit); err != nil {
						return fmt.Errorf("ledger unit %d: adaptive: %w", j.idx, err)
					}
				}
				created[j.idx] = unit
			}
		}
		rows[i] = j.PreparedJob
		rows[i].Unit = unit
	}
	refs, err := l.insertJobs(tx, rows, now)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	l.noteKnown(refs)
	b.id = id
	for idx, unit := range created {
		b.unitIDs[idx] = unit
	}
	for i := range jobs {
		jobs[i].Unit = rows[i].Unit
	}
	return nil
}

// Pending lists the jobs of a batch (all batches when 0) not yet
// acknowledged by r replicas.
func (l *Ledger) Pending(batch int64) ([]PreparedJob, error) {
	q := `SELECT j.cid, j.unit, j.copy, s.signed, s.listing FROM jobs j JOIN units u ON u.id = j.unit JOIN specs s ON s.job = j.id WHERE j.state = ?`
	args := []any{StatePrepared}
	if batch != 0 {
		q += ` AND u.batch = ?`
		args = append(args, batch)
	}
	rows, err := l.db.Query(q+` ORDER BY j.id`, args...)
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
	if len(acks) == 0 {
		return nil
	}
	cids := make([]string, 0, len(acks))
	for cid := range acks {
		cids = append(cids, cid)
	}
	return l.lazyTx(func(tx *sql.Tx) error {
		refs, err := l.refsOf(tx, cids)
		if err != nil {
			return err
		}
		// One statement per number of acknowledgements: most often one.
		byAcks := map[int][]jobRef{}
		for _, r := range refs {
			byAcks[acks[r.cid]] = append(byAcks[acks[r.cid]], r)
		}
		for _, n := range slices.Sorted(maps.Keys(byAcks)) {
			refs := byAcks[n]
			if _, err := l.exec(tx, qMarkSubmitted, StateSubmitted, now.UnixMilli(), refsArg(refs), StatePrepared, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// placeholders returns "?,?,...".
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }
