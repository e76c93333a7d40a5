package project

import (
	"database/sql"
	"fmt"
	"os"
)

// readerConns bounds the connections of a ledger opened for reading:
// reports run side by side, a harvest in another process writing
// meanwhile.
const readerConns = 4

// OpenLedgerReader opens the ledger at path for reading only: what `up
// project serve` reads its reports from while `up project harvest` or
// `submit` writes the same ledger from another process. The ledger is in
// WAL mode, so its readers and its writer never wait for each other: a
// query sees the ledger as of the last commit before it began, and a
// commit never waits for a query. The ledger must exist. Opening it runs
// OpenLedger once first, which brings a ledger of an older version up to
// the schema (a brief write, waiting up to its busy timeout for a
// writer's transaction); every connection after that is read-only
// (mode=ro, query_only), so nothing it runs can write.
func OpenLedgerReader(path string) (*Ledger, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	w, err := OpenLedger(path)
	if err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	db.SetMaxOpenConns(readerConns)
	db.SetMaxIdleConns(readerConns)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	return &Ledger{db: db, path: path, stmts: map[string]*sql.Stmt{}}, nil
}
