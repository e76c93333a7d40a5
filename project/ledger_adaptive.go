package project

import (
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
)

// adaptiveSchema is adaptive replication's part of the ledger, created
// in place in a ledger written before it (migrateAdaptive); a ledger
// without adaptive units never writes to it.
//
// adaptive has a row per unit of an adaptive job file, written with the
// unit; decision stays NULL until the unit's first successful result is
// validated, then says why that result stood alone or the unit was
// replicated (AdaptiveSingle, AdaptiveSpotCheck, AdaptiveReplicated),
// with the result judged, its client, and the client's record then: its
// valid and invalid results among its latest AdaptivePolicy.Window.
//
// ledger_secrets holds the seed of the spot-check draw (AdaptiveSeed).
// results_client finds a client's latest graded results.
const adaptiveSchema = `
CREATE TABLE IF NOT EXISTS adaptive(
	unit           INTEGER PRIMARY KEY REFERENCES units(id),
	decision       TEXT,
	result         TEXT,
	client         TEXT,
	record_valid   INTEGER,
	record_invalid INTEGER,
	decided        INTEGER);
CREATE INDEX IF NOT EXISTS adaptive_decision ON adaptive(decision);
CREATE TABLE IF NOT EXISTS ledger_secrets(
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS results_client ON results(client_key, harvested);
`

// migrateAdaptive creates the adaptive tables in a ledger without them.
func migrateAdaptive(db *sql.DB) error {
	if _, err := db.Exec(adaptiveSchema); err != nil {
		return fmt.Errorf("adaptive tables: %w", err)
	}
	return nil
}

const (
	qInsertAdaptive = `INSERT INTO adaptive(unit) VALUES(?) ON CONFLICT(unit) DO NOTHING`
	// [[unit, decision, result, client, valid, invalid, now], ...]: a
	// unit is decided once.
	qDecideAdaptive = `UPDATE adaptive SET decision = e.value->>1, result = e.value->>2, client = e.value->>3,
		record_valid = e.value->>4, record_invalid = e.value->>5, decided = e.value->>6
		FROM json_each(?) e WHERE adaptive.unit = e.value->>0 AND adaptive.decision IS NULL`
	// A client's latest graded results (valid 0 or 1: duplicates left
	// out), newest first: by harvest time, then in the order recorded
	// (rowid: a harvest records many in one millisecond).
	qClientRecord = `SELECT valid = 1 FROM results WHERE client_key = ? AND valid IN (0, 1)
		ORDER BY harvested DESC, rowid DESC LIMIT ?`
	adaptiveSeedName = "adaptive_seed"
)

// AdaptiveSeed returns the ledger's secret seed of the spot-check draw
// (SpotCheck), making it (32 random bytes) the first time. It never
// leaves the ledger: a client that knew it could tell which units are
// spot-checked.
func (l *Ledger) AdaptiveSeed() ([]byte, error) {
	var seed []byte
	err := l.db.QueryRow(`SELECT value FROM ledger_secrets WHERE name = ?`, adaptiveSeedName).Scan(&seed)
	if err == nil {
		return seed, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("ledger: adaptive seed: %w", err)
	}
	seed = make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("ledger: make the adaptive seed: %w", err)
	}
	if _, err := l.db.Exec(`INSERT INTO ledger_secrets(name, value) VALUES(?, ?) ON CONFLICT(name) DO NOTHING`, adaptiveSeedName, seed); err != nil {
		return nil, fmt.Errorf("ledger: store the adaptive seed: %w", err)
	}
	if err := l.db.QueryRow(`SELECT value FROM ledger_secrets WHERE name = ?`, adaptiveSeedName).Scan(&seed); err != nil {
		return nil, fmt.Errorf("ledger: adaptive seed: %w", err)
	}
	return seed, nil
}

// clientRecord returns a client's latest graded results, newest first,
// window at most (see Trusted).
func (l *Ledger) clientRecord(clientKey []byte, window int) ([]bool, error) {
	s, err := l.stmt(qClientRecord)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(clientKey, window)
	if err != nil {
		return nil, fmt.Errorf("ledger: a client's record: %w", err)
	}
	defer rows.Close()
	var out []bool
	for rows.Next() {
		var ok bool
		if err := rows.Scan(&ok); err != nil {
			return nil, fmt.Errorf("ledger: a client's record: %w", err)
		}
		out = append(out, ok)
	}
	return out, rows.Err()
}

// adaptiveDecision is the decision made for an adaptive unit, to record.
type adaptiveDecision struct {
	decision       string
	result, client string // the result judged; its client's key, in hex
	valid, invalid int    // the client's record: among its latest Window graded results
}

// adaptiveJudge decides adaptive units in a validation pass: it reads
// each client's record once per pass (a client's grades of the same pass
// are not committed yet, so they count from the next harvest) and the
// seed once.
type adaptiveJudge struct {
	l       *Ledger
	pol     AdaptivePolicy
	seed    []byte
	records map[string][]bool
}

func newAdaptiveJudge(l *Ledger, pol AdaptivePolicy) *adaptiveJudge {
	return &adaptiveJudge{l: l, pol: pol.withDefaults(), records: map[string][]bool{}}
}

// judge decides u when it is an adaptive unit not decided yet with a
// successful result: it sets u.decision and returns what to record; nil
// when there is nothing to decide.
func (j *adaptiveJudge) judge(u *unitState) (*adaptiveDecision, error) {
	if !u.adaptive || u.decision != "" || u.status == UnitValid {
		return nil, nil
	}
	var first *Copy
	for i := range u.results {
		if !u.results[i].Failed {
			first = &u.results[i]
			break
		}
	}
	if first == nil {
		return nil, nil
	}
	rec, ok := j.records[string(first.ClientKey)]
	if !ok {
		var err error
		if rec, err = j.l.clientRecord(first.ClientKey, j.pol.Window); err != nil {
			return nil, err
		}
		j.records[string(first.ClientKey)] = rec
	}
	trusted := Trusted(rec, j.pol.MinValid, j.pol.Window)
	drawn := false
	if trusted {
		if j.seed == nil {
			if j.seed = j.pol.Seed; j.seed == nil {
				var err error
				if j.seed, err = j.l.AdaptiveSeed(); err != nil {
					return nil, err
				}
			}
		}
		drawn = SpotCheck(j.seed, u.id, j.pol.SpotCheck)
	}
	d := &adaptiveDecision{decision: decideAdaptive(trusted, drawn), result: first.CID, client: fmt.Sprintf("%x", first.ClientKey)}
	for _, ok := range rec {
		if ok {
			d.valid++
		} else {
			d.invalid++
		}
	}
	u.decision = d.decision
	return d, nil
}

// adaptiveRows is decisions as qDecideAdaptive's argument rows.
func adaptiveRows(vs []unitVerdict, now int64) [][]any {
	var rows [][]any
	for _, v := range vs {
		if d := v.adaptive; d != nil {
			rows = append(rows, []any{v.unit, d.decision, d.result, d.client, d.valid, d.invalid, now})
		}
	}
	return rows
}

// adaptiveStats fills s.Adaptive: the adaptive units by decision.
func (l *Ledger) adaptiveStats(s *Stats) error {
	out := map[string]int{}
	if err := countBy(l.db, `SELECT COALESCE(decision, 'undecided'), COUNT(*) FROM adaptive GROUP BY 1`, out); err != nil {
		return fmt.Errorf("ledger: adaptive units: %w", err)
	}
	if len(out) > 0 {
		s.Adaptive = out
	}
	return nil
}
