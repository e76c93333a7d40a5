package project

import (
	"database/sql"
	"fmt"
	"time"
)

// A unit of one copy is decided as its result is recorded (issue 23):
// RecordResults would otherwise queue the unit (to_validate), and the
// harvest's validation would load it back, decide it and record the
// verdict, the grade and the unqueueing — five statements for a verdict
// known when the result arrives. A unit whose file asked for one copy,
// that has one job (no copy was added: no earlier result failed or was
// lost) whose result this is, no adaptive replication and is open, is valid
// with its first successful result as the canonical one: that is what
// Validate decides for one successful result at a quorum of one, and
// it is what this code asks Validate (decideOnRecord). The result is
// inserted graded; the unit's verdict is written in the same synced
// transaction; the unit is not queued. Every other result queues its
// unit as before. What a harvest reports is unchanged: the units so
// decided count in HarvestReport.Decided. One thing moves earlier: the
// adaptive judge's record of a client (clientRecord) sees these grades
// in the harvest that recorded them, not only once their unit's
// validation page had run.

// qRecordFacts gives, for each job of a JSON array of CIDs, its id, the
// client key of the result the ledger holds for it (NULL: none), its
// unit and what decides whether the unit is decided on record: the
// unit's status and copies asked, its jobs and whether it is adaptive.
// (A unit of one job has no result but that job's, which the caller
// knows.)
const qRecordFacts = `SELECT j.cid, j.id, r.client_key, j.unit, u.status, u.copies,
	(SELECT COUNT(*) FROM jobs k WHERE k.unit = j.unit),
	EXISTS(SELECT 1 FROM adaptive a WHERE a.unit = j.unit)
	FROM json_each(?) e CROSS JOIN jobs j ON ` + jobIsRef + ` CROSS JOIN units u ON u.id = j.unit
	LEFT JOIN results r ON r.job = j.id`

// recordFacts is a job's row of qRecordFacts.
type recordFacts struct {
	job          int64  // the job's id
	resultKey    []byte // the client key of the result held, nil: none
	unit         int64
	status       string
	copies, jobs int
	adaptive     bool
	verdict      *Verdict // decideOnRecord's, nil: the unit is queued
}

// factsOf reads qRecordFacts for the jobs of cids, by id (refsOf).
func (l *Ledger) factsOf(tx *sql.Tx, cids []string) (map[string]*recordFacts, error) {
	refs, err := l.refsOf(tx, cids)
	if err != nil {
		return nil, err
	}
	s, err := l.txStmt(tx, qRecordFacts)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(refsArg(refs))
	if err != nil {
		return nil, fmt.Errorf("ledger: units of the results: %w", err)
	}
	defer rows.Close()
	out := map[string]*recordFacts{}
	for rows.Next() {
		var cid string
		f := &recordFacts{}
		if err := rows.Scan(&cid, &f.job, &f.resultKey, &f.unit, &f.status, &f.copies, &f.jobs, &f.adaptive); err != nil {
			return nil, fmt.Errorf("ledger: units of the results: %w", err)
		}
		out[cid] = f
	}
	return out, rows.Err()
}

// decideOnRecord decides f's unit with r, a result the ledger did not
// hold, when the unit is one Validate decides on that result alone (see
// above): it sets f.verdict to the verdict, valid with r canonical. The
// unit has one job, r's, so no other result.
func decideOnRecord(f *recordFacts, r *Result) {
	if f == nil || f.status != UnitOpen || f.copies != 1 || f.jobs != 1 || f.adaptive {
		return
	}
	c := Copy{CID: r.CID, ClientKey: r.ClientKey, Output: r.Output, Failed: r.ExitCode != 0 || r.Error != ""}
	if c.Failed {
		return
	}
	v := Validate([]Copy{c}, f.jobs, Quorum(f.copies), nil)
	if v.Status != UnitValid || v.Canonical != r.CID || !v.Valid[r.CID] {
		return // not what a lone good result gets: leave it to validation
	}
	f.verdict = &v
}

// recordVerdicts writes, in tx, the verdicts decideOnRecord made (the
// units' statuses; the results were inserted graded), and queues the
// units of the other recorded jobs (queue, a JSON array of their CIDs).
func (l *Ledger) recordVerdicts(tx *sql.Tx, decided []*recordFacts, queue []jobRef, now time.Time) error {
	if len(decided) > 0 {
		vs := make([]unitVerdict, len(decided))
		for i, f := range decided {
			// The grade went in with the result: the status alone.
			v := Verdict{Status: f.verdict.Status, Canonical: f.verdict.Canonical}
			vs[i] = unitVerdict{unit: f.unit, verdict: &v, results: 1}
		}
		if err := l.setVerdicts(tx, vs, now); err != nil {
			return err
		}
	}
	if len(queue) == 0 {
		return nil
	}
	_, err := l.exec(tx, qQueueUnits, refsArg(queue))
	return err
}
