package project

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
)

// Jobs found by id. The statements of the hot paths — acknowledgements
// (MarkSubmitted), a harvest's states and facts, its queued units and
// collected marks — name each job by its ledger id and CID, {cid: id,
// ...}, and find it by its row (the table's own key), not through
// jobs_cid, an index of random keys whose lookups cost a few µs each
// and, once it outgrows the page cache, a page read each. The id comes
// from Ledger.known, which the process fills as it records jobs (after
// the commit: an id noted is one the ledger holds, never a rolled-back
// insert's, which a later job could take); a job not there (recorded
// by another process or before a restart, or dropped when known was
// full) is looked up by CID once per statement (refsOf). Every
// statement checks the CID too (j.cid = the element's), so a wrong id
// would find no row, never another job.

// maxKnown bounds Ledger.known (~120 bytes an entry: ~8 MB); when full it
// is emptied and jobs are looked up by CID until they are noted again.
const maxKnown = 1 << 16

// jobIsRef joins a member "cid": id of a JSON object (e, refsArg's) to
// its job (j). An object, not an array of pairs: json_each gives a
// member's key and value as they are, where an element's e.value->>N
// parses it again for each field (~0.35 µs each in modernc SQLite).
const jobIsRef = `j.id = e.value AND j.cid = e.key`

// qRefsOf looks jobs up by CID (a JSON array of CIDs): those not known.
const qRefsOf = `SELECT j.cid, j.id FROM json_each(?) e CROSS JOIN jobs j ON ` + jobIsValue

// jobRef names a job by its id and CID.
type jobRef struct {
	id  int64
	cid string
}

// noteKnown records the ids of jobs just committed.
func (l *Ledger) noteKnown(refs []jobRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known == nil {
		l.known = make(map[string]int64, len(refs))
	}
	for _, r := range refs {
		if len(l.known) >= maxKnown {
			clear(l.known)
		}
		l.known[r.cid] = r.id
	}
}

// forgetKnown drops jobs whose hot path is over (collected).
func (l *Ledger) forgetKnown(refs []jobRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range refs {
		delete(l.known, r.cid)
	}
}

// splitKnown returns the jobs of cids Ledger.known names, by id and CID,
// and the other CIDs, each in the order of cids.
func (l *Ledger) splitKnown(cids []string) (refs []jobRef, unknown []string) {
	refs = make([]jobRef, 0, len(cids))
	unknown = []string{} // an empty JSON array, not null
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cids {
		if id, ok := l.known[c]; ok {
			refs = append(refs, jobRef{id: id, cid: c})
		} else {
			unknown = append(unknown, c)
		}
	}
	return refs, unknown
}

// refsOf names those of cids the ledger holds by id and CID: the ones
// known, then the rest looked up in tx by CID in one statement, each
// part in the order of cids.
func (l *Ledger) refsOf(tx *sql.Tx, cids []string) ([]jobRef, error) {
	refs, unknown := l.splitKnown(cids)
	if len(unknown) == 0 {
		return refs, nil
	}
	found, err := l.lookUpRefs(tx, unknown)
	if err != nil {
		return nil, err
	}
	if len(found) < len(unknown) {
		// Some may be jobs recorded since the CID index's last fill.
		did, err := l.fillCIDs(tx, 1)
		if err != nil {
			return nil, err
		}
		if did {
			if found, err = l.lookUpRefs(tx, unknown); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range unknown {
		if id, ok := found[c]; ok {
			refs = append(refs, jobRef{id: id, cid: c})
		}
	}
	return refs, nil
}

// lookUpRefs finds the ids of cids by CID.
func (l *Ledger) lookUpRefs(tx *sql.Tx, cids []string) (map[string]int64, error) {
	list, err := jsonArg(cids)
	if err != nil {
		return nil, err
	}
	s, err := l.txStmt(tx, qRefsOf)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(list)
	if err != nil {
		return nil, fmt.Errorf("ledger: look %d jobs up by CID: %w", len(cids), err)
	}
	defer rows.Close()
	out := make(map[string]int64, len(cids))
	for rows.Next() {
		var c string
		var id int64
		if err := rows.Scan(&c, &id); err != nil {
			return nil, fmt.Errorf("ledger: look %d jobs up by CID: %w", len(cids), err)
		}
		out[c] = id
	}
	return out, rows.Err()
}

// refsArg encodes refs as the JSON object {"cid": id, ...} the
// statements read (jobIsRef). A CID named twice is a member twice, which
// json_each gives twice, as it gave an array's repeated element.
func refsArg(refs []jobRef) string {
	b := make([]byte, 0, len(refs)*80+2)
	b = append(b, '{')
	for i, r := range refs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, r.cid)
		b = append(b, ':')
		b = strconv.AppendInt(b, r.id, 10)
	}
	return string(append(b, '}'))
}

// appendJSONString appends s as a JSON string: as it is when it is
// printable ASCII without quote or backslash (every CID), else as
// encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
