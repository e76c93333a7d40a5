package project

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/up-pool/up/store"
)

// BenchmarkLedgerFloor is the floor BenchmarkLedgerLifecycle is measured
// against: the same life of a job in the fewest rows and statements SQLite
// (modernc) allows — a job row with its signed spec, three state changes
// as one json_each statement per page of 64, a result row, commits synced
// (FULL) as the ledger's record and results commits are — per job. With
// indexes like the ledger's (state; client and ungraded results) it is
// the "indexed" case.
func BenchmarkLedgerFloor(b *testing.B) {
	for _, c := range []struct{ name, schema string }{
		{"plain", `CREATE TABLE jobs(cid TEXT PRIMARY KEY, state TEXT, signed BLOB);
			CREATE TABLE results(cid TEXT PRIMARY KEY, output BLOB, valid INT, client_key BLOB, harvested INT);`},
		{"indexed", `CREATE TABLE jobs(cid TEXT PRIMARY KEY, state TEXT, signed BLOB); CREATE INDEX js ON jobs(state);
			CREATE TABLE results(cid TEXT PRIMARY KEY, output BLOB, valid INT, client_key BLOB, harvested INT);
			CREATE INDEX rc ON results(client_key, harvested); CREATE INDEX ru ON results(cid) WHERE valid IS NULL;`},
		{"by-id", `CREATE TABLE jobs(id INTEGER PRIMARY KEY, cid TEXT NOT NULL UNIQUE, state TEXT, signed BLOB);
			CREATE TABLE results(job INTEGER PRIMARY KEY, output BLOB, valid INT, client_key BLOB, harvested INT);`},
	} {
		b.Run(c.name, func(b *testing.B) { floorRun(b, c.schema) })
	}
	b.Run("pebble", floorPebble)
}

// floorPebble is the same life in an LSM store (pebble, as the nodes'
// store): a job record (its signed spec) and a state key put per job, the
// state rewritten at each step, the result put; each page's step one
// batch, committed synced. Keys are the CIDs: an LSM writes them to its
// log in arrival order, so a random key costs no random page write.
func floorPebble(b *testing.B) {
	st, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const page = 64
	signed, out := make([]byte, 900), make([]byte, 64+32)
	all := make([]string, (300+b.N)*page)
	for i := range all {
		all[i] = benchCID(fmt.Sprint("floor", i))
	}
	n := 0
	lives := func(pages int) {
		for range pages {
			cids := all[n : n+page]
			n += page
			for step, state := range []string{"prepared", "submitted", "harvested", "collected"} {
				bt := st.NewBatch()
				for _, c := range cids {
					if step == 0 {
						bt.Put(store.Key("job", []byte(c)), signed)
					}
					if step == 2 {
						bt.Put(store.Key("result", []byte(c)), out)
					}
					bt.Put(store.Key("state", []byte(c)), []byte(state))
				}
				if err := bt.Commit(true); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	lives(300)
	b.ResetTimer()
	cpu0 := processCPU()
	lives(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*page), "cpu-µs/job")
}

func floorRun(b *testing.B, schema string) {
	byID := strings.Contains(schema, "INTEGER PRIMARY KEY")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "f.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		b.Fatal(err)
	}
	const page = 64
	signed, out, key := make([]byte, 900), make([]byte, 64), make([]byte, 32)
	all := make([]string, (300+b.N)*page) // named before the clock starts
	for i := range all {
		all[i] = benchCID(fmt.Sprint("floor", i))
	}
	col := "cid"
	if byID {
		col = "id"
	}
	n := 0
	exec := func(tx *sql.Tx, q string, args ...any) {
		if _, err := tx.Exec(q, args...); err != nil {
			b.Fatal(err)
		}
	}
	lives := func(pages int) {
		for range pages {
			cids := make([]string, page)
			for i := range cids {
				cids[i] = all[n]
				n++
			}
			list, _ := json.Marshal(cids)
			for step := range 4 {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				switch step {
				case 0:
					for _, c := range cids {
						exec(tx, `INSERT INTO jobs(cid, state, signed) VALUES(?, 'prepared', ?)`, c, signed)
					}
					if byID { // the ids of the page's jobs, as the ledger would keep them
						ids := make([]int64, page)
						rows, err := tx.Query(`SELECT j.id FROM json_each(?) e CROSS JOIN jobs j ON j.cid = e.value`, string(list))
						if err != nil {
							b.Fatal(err)
						}
						for i := 0; rows.Next(); i++ {
							_ = rows.Scan(&ids[i])
						}
						rows.Close()
						list, _ = json.Marshal(ids)
					}
				case 1:
					exec(tx, `UPDATE jobs SET state = 'submitted' WHERE `+col+` IN (SELECT value FROM json_each(?))`, string(list))
				case 2:
					if byID {
						exec(tx, `INSERT INTO results(job, output, valid, client_key, harvested) SELECT value, ?, 1, ?, 1 FROM json_each(?)`, out, key, string(list))
						exec(tx, `UPDATE jobs SET state = 'harvested' WHERE id IN (SELECT value FROM json_each(?))`, string(list))
						break
					}
					for _, c := range cids {
						exec(tx, `INSERT INTO results(cid, output, valid, client_key, harvested) VALUES(?, ?, 1, ?, 1)`, c, out, key)
					}
					exec(tx, `UPDATE jobs SET state = 'harvested' WHERE cid IN (SELECT value FROM json_each(?))`, string(list))
				case 3:
					exec(tx, `UPDATE jobs SET state = 'collected' WHERE `+col+` IN (SELECT value FROM json_each(?))`, string(list))
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	lives(300) // 19,200 jobs in the table first
	b.ResetTimer()
	cpu0 := processCPU()
	lives(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*page), "cpu-µs/job")
}
