package project

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/job"
)

// Known reports the ledger state of a job ("" when it is not the
// project's).
func (l *Ledger) Known(cid string) (string, error) {
	if err := l.indexCIDs(); err != nil {
		return "", err
	}
	s, err := l.stmt(qKnown)
	if err != nil {
		return "", err
	}
	var st string
	err = s.QueryRow(cid).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return st, err
}

var qKnown = `SELECT j.state FROM jobs j WHERE ` + jobWithCID("j", "?1")

// qStates is the ledger state of each job of a JSON object of refs (?1,
// {cid: id, ...}: jobs Ledger.known names) and of an array of CIDs (?2:
// the others).
const qStates = `SELECT j.cid, j.state FROM json_each(?1) e CROSS JOIN jobs j ON ` + jobIsRef + `
	UNION ALL SELECT j.cid, j.state FROM json_each(?2) e CROSS JOIN jobs j ON ` + jobIsValue

// states returns the ledger state of each of cids that is the project's
// (Known for many jobs, in one statement).
func (l *Ledger) states(cids []string) (map[string]string, error) {
	out := make(map[string]string, len(cids))
	if len(cids) == 0 {
		return out, nil
	}
	refs, unknown := l.splitKnown(cids)
	if err := l.readStates(refs, unknown, out); err != nil {
		return nil, err
	}
	// A job not found by CID may be one recorded since the index's last
	// fill: fill it, and look those up again.
	var missing []string
	for _, c := range unknown {
		if _, ok := out[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	if err := l.indexCIDs(); err != nil {
		return nil, err
	}
	return out, l.readStates(nil, missing, out)
}

// readStates adds to out the states qStates reads of refs and of the
// jobs of unknown by CID.
func (l *Ledger) readStates(refs []jobRef, unknown []string, out map[string]string) error {
	list, err := json.Marshal(unknown)
	if err != nil {
		return err
	}
	s, err := l.stmt(qStates)
	if err != nil {
		return err
	}
	rows, err := s.Query(refsArg(refs), string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c, st string
		if err := rows.Scan(&c, &st); err != nil {
			return err
		}
		out[c] = st
	}
	return rows.Err()
}

// MarkCollected records that the nodes were told.
func (l *Ledger) MarkCollected(cids []string, now time.Time) error {
	if len(cids) == 0 {
		return nil
	}
	return l.lazyTx(func(tx *sql.Tx) error { return l.markCollected(tx, cids, now) })
}

func (l *Ledger) markCollected(tx *sql.Tx, cids []string, now time.Time) error {
	if len(cids) == 0 {
		return nil
	}
	refs, err := l.refsOf(tx, cids)
	if err != nil {
		return err
	}
	if _, err := l.exec(tx, qMarkCollected, StateCollected, now.UnixMilli(), refsArg(refs), StateHarvested); err != nil {
		return err
	}
	// Forgotten even if tx rolls back: a job not known is looked up by
	// CID, no harm.
	l.forgetKnown(refs)
	return nil
}

const qHarvested = `SELECT j.cid, s.listing FROM jobs j JOIN specs s ON s.job = j.id WHERE j.state = ?`

// Harvested lists jobs whose result is recorded but whose nodes were not
// yet told (a harvest stopped between the two).
func (l *Ledger) Harvested() ([]string, error) {
	jobs, err := l.harvestedJobs()
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.cid
	}
	return out, err
}

// harvestedJob is a job Harvested lists, with its place key
// (job.Listing.PlaceKey, from the listing the ledger keeps).
type harvestedJob struct {
	cid   string
	place []byte
}

// harvestedJobs is Harvested with each job's place key.
func (l *Ledger) harvestedJobs() ([]harvestedJob, error) {
	s, err := l.stmt(qHarvested)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(StateHarvested)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []harvestedJob
	for rows.Next() {
		var j harvestedJob
		var listing []byte
		if err := rows.Scan(&j.cid, &listing); err != nil {
			return nil, err
		}
		if _, l, err := job.DecodeListing(listing); err == nil {
			j.place = l.PlaceKey()
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// placeOf is the place key of job cid (job.Listing.PlaceKey), from the
// listing the ledger keeps.
func (l *Ledger) placeOf(cid string) ([]byte, error) {
	if err := l.indexCIDs(); err != nil {
		return nil, err
	}
	var listing []byte
	if err := l.db.QueryRow(`SELECT s.listing FROM jobs j JOIN specs s ON s.job = j.id WHERE `+jobWithCID("j", "?1"), cid).Scan(&listing); err != nil {
		return nil, fmt.Errorf("job %s in the ledger: %w", cid, err)
	}
	_, sl, err := job.DecodeListing(listing)
	if err != nil {
		return nil, fmt.Errorf("job %s's listing in the ledger: %w", cid, err)
	}
	return sl.PlaceKey(), nil
}
