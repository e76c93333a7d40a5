package project

import (
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// Known reports the ledger state of a job ("" when it is not the
// project's).
func (l *Ledger) Known(cid string) (string, error) {
	s, err := l.stmt(`SELECT state FROM jobs WHERE cid = ?`)
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

// qStates is the ledger state of each job of a JSON array of CIDs.
const qStates = `SELECT j.cid, j.state FROM json_each(?) e CROSS JOIN jobs j ON j.cid = e.value`

// states returns the ledger state of each of cids that is the project's
// (Known for many jobs, in one statement).
func (l *Ledger) states(cids []string) (map[string]string, error) {
	out := make(map[string]string, len(cids))
	if len(cids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(cids)
	if err != nil {
		return nil, err
	}
	s, err := l.stmt(qStates)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c, st string
		if err := rows.Scan(&c, &st); err != nil {
			return nil, err
		}
		out[c] = st
	}
	return out, rows.Err()
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
	list, err := jsonArg(cids)
	if err != nil {
		return err
	}
	_, err = l.exec(tx, qMarkCollected, StateCollected, now.UnixMilli(), list, StateHarvested)
	return err
}

const qHarvested = `SELECT cid FROM jobs WHERE state = ?`

// Harvested lists jobs whose result is recorded but whose nodes were not
// yet told (a harvest stopped between the two).
func (l *Ledger) Harvested() ([]string, error) {
	s, err := l.stmt(qHarvested)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(StateHarvested)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
