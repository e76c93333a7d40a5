package project

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The jobs of testdata/ledger-v1.sql, in the order they were recorded.
const (
	v1Prepared  = "bafyreidvkugdf3krlsvoazvzkrgw7pyi2my2ejo2aodavl2k72y3m5adt4" // unit 3
	v1Collected = "bafyreidwmhpclqnxccq7gpoltcd4fibahkpbcum77777xd53htg5gmz57a" // unit 1, valid, credited
	v1Harvested = "bafyreidscjom7ndl6i3vvoncchora6hbxhr5dgff6bl6lph23ng3k6tb2m" // unit 2, ungraded
)

// writeV1Ledger writes testdata/ledger-v1.sql, then extra, as a ledger
// file (foreign keys off, as a file another tool wrote may be) and
// returns its path.
func writeV1Ledger(t *testing.T, extra string) string {
	t.Helper()
	fixture, err := os.ReadFile("testdata/ledger-v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(fixture) + extra); err != nil {
		t.Fatalf("write the old ledger: %v", err)
	}
	return path
}

// TestMigrateByID: a ledger keyed by CID opens keyed by sequence, every
// job and result kept — jobs in the order they were recorded, each result
// on its job, grades, receipts and record order kept — and works as a new
// one: looked up by CID, the ungraded result's unit queued, new results
// recorded; opening it again changes nothing.
func TestMigrateByID(t *testing.T) {
	path := writeV1Ledger(t, "")
	for round := range 2 {
		l, err := OpenLedger(path)
		if err != nil {
			t.Fatalf("open %d: %v", round, err)
		}
		var cids []string
		rows, err := l.db.Query(`SELECT cid FROM jobs ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			_ = rows.Scan(&c)
			cids = append(cids, c)
		}
		rows.Close()
		if want := []string{v1Prepared, v1Collected, v1Harvested}; !slices.Equal(cids, want) {
			t.Fatalf("open %d: jobs by id %v, want the order recorded %v", round, cids, want)
		}
		for c, want := range map[string]string{v1Prepared: StatePrepared, v1Collected: StateCollected, v1Harvested: StateHarvested} {
			if st, err := l.Known(c); err != nil || st != want {
				t.Fatalf("open %d: job %s is %q (%v), want %q", round, c[len(c)-6:], st, err, want)
			}
		}
		r, idx, err := l.ResultOf(v1Collected)
		if err != nil || idx != 0 || r.Client != "w1" || string(r.Output) != "o1" || r.Valid == nil || !*r.Valid {
			t.Fatalf("open %d: result of the collected job %+v unit %d (%v)", round, r, idx, err)
		}
		for c, want := range map[string]string{v1Prepared: "\x03\x33", v1Collected: "\x01\x11", v1Harvested: "\x02\x22"} {
			var spec string
			if err := l.db.QueryRow(`SELECT s.signed || s.listing FROM jobs j JOIN specs s ON s.job = j.id WHERE j.cid = ?`, c).Scan(&spec); err != nil || spec != want {
				t.Fatalf("open %d: job %s's spec and listing %q (%v), want %q", round, c[len(c)-6:], spec, err, want)
			}
		}
		var receipt sql.NullInt64
		if err := l.db.QueryRow(`SELECT r.receipt FROM results r JOIN jobs j ON j.id = r.job WHERE j.cid = ?`, v1Collected).Scan(&receipt); err != nil || receipt.Int64 != 1 {
			t.Fatalf("open %d: receipt %v (%v), want 1", round, receipt, err)
		}
		page, err := l.ResultsPage(0, 10)
		if err != nil || len(page.Results) != 2 || page.Results[0].Job != v1Harvested || page.Results[1].Job != v1Collected {
			t.Fatalf("open %d: results page %+v (%v), want the harvested job's result first (recorded last)", round, page.Results, err)
		}
		if u, err := l.Undecided(); err != nil || !slices.Equal(u, []int64{2}) {
			t.Fatalf("open %d: undecided %v (%v), want unit 2 (its result ungraded)", round, u, err)
		}
		var fk, bad int
		if err := l.db.QueryRow(`SELECT foreign_keys FROM pragma_foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Fatalf("open %d: foreign keys %d (%v), want on", round, fk, err)
		}
		if err := l.db.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&bad); err != nil || bad != 0 {
			t.Fatalf("open %d: %d foreign key violations (%v)", round, bad, err)
		}
		checkPlan(t, l, "known", qKnown, []any{v1Prepared})
		l.Close()
	}
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now := time.UnixMilli(1700000010000)
	if err := l.RecordResults([]Result{{CID: v1Prepared, Client: "w3", ClientKey: []byte("k3"), Output: []byte("o3"), At: now}}, now); err != nil {
		t.Fatalf("record a result after the migration: %v", err)
	}
	if st, _ := l.Known(v1Prepared); st != StateHarvested {
		t.Fatalf("job of the new result is %q, want harvested", st)
	}
	if err := l.RecordResults([]Result{{CID: v1Harvested, Client: "w9", ClientKey: []byte("k9"), At: now}}, now); !strings.Contains(err.Error(), ErrResultConflict.Error()) {
		t.Fatalf("another client's result of a migrated result's job: %v, want a conflict", err)
	}
}

// TestMigrateByIDRefusesOrphans: a result naming no job (written with
// foreign keys off) would be dropped by the rebuild: the migration is
// refused with the count, and the file is left as it was.
func TestMigrateByIDRefusesOrphans(t *testing.T) {
	path := writeV1Ledger(t, `INSERT INTO results(cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested)
		VALUES('bafyreiorphan', 'w', x'77', x'', 0, '', 0, 0, 0, 0);`)
	if l, err := OpenLedger(path); err == nil || !strings.Contains(err.Error(), "1 results name no job") {
		if l != nil {
			l.Close()
		}
		t.Fatalf("open a ledger with an orphan result: %v, want the migration refused", err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keyed bool
	var results int
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'id'), (SELECT COUNT(*) FROM results)`).Scan(&keyed, &results); err != nil {
		t.Fatal(err)
	}
	if keyed || results != 3 {
		t.Fatalf("after the refused migration: jobs keyed by id %v, %d results; want the old tables, 3 results", keyed, results)
	}
}

// TestShortCIDsAreWholeKeys: a CID shorter than the index's 16
// characters is its own key, and two CIDs ending alike in fewer than 16
// are two jobs.
func TestShortCIDsAreWholeKeys(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedgerNamed(t, l, "b", 3, 1, func(s string) string { return "x" + s })
	for _, c := range cids {
		if st, err := l.Known(c[0]); err != nil || st != StatePrepared {
			t.Fatalf("job %s: %q %v", c[0], st, err)
		}
	}
	if st, err := l.Known("b-u0-c0"); err != nil || st != "" {
		t.Fatalf("a CID the ledger does not hold that ends as one it holds: %q %v, want unknown", st, err)
	}
}

// TestMigrateSpecs: a ledger whose jobs are keyed by id but still hold
// their specs and listings in their rows (the layout between) gets them
// moved to specs when it opens, every job's kept; the jobs' rows lose
// the two columns.
func TestMigrateSpecs(t *testing.T) {
	l, path := openTestLedger(t)
	cids := fillLedger(t, l, "b", 5, 1)
	want := map[string][]byte{}
	for i, c := range cids {
		want[c[0]] = []byte{byte(i), 7}
		if _, err := l.db.Exec(`UPDATE specs SET signed = ?, listing = x'09' WHERE job = (SELECT id FROM jobs WHERE cid = ?)`, want[c[0]], c[0]); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`ALTER TABLE jobs ADD COLUMN signed BLOB`, `ALTER TABLE jobs ADD COLUMN listing BLOB`,
		`UPDATE jobs SET signed = (SELECT signed FROM specs WHERE job = jobs.id), listing = (SELECT listing FROM specs WHERE job = jobs.id)`,
		`DELETE FROM specs`,
	} {
		if _, err := l.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	l.Close()
	l2, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	specs, err := l2.jobSpecsRaw(cids)
	if err != nil {
		t.Fatal(err)
	}
	for c, w := range want {
		if string(specs[c]) != string(w) {
			t.Fatalf("job %s's spec %x after the move, want %x", c, specs[c], w)
		}
	}
	var left int
	if err := l2.db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name IN ('signed', 'listing')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d spec columns left in jobs (%v)", left, err)
	}
}

// jobSpecsRaw returns the signed bytes of each job of cids (each cids[i][0]).
func (l *Ledger) jobSpecsRaw(cids [][]string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, c := range cids {
		var signed []byte
		if err := l.db.QueryRow(`SELECT s.signed FROM jobs j JOIN specs s ON s.job = j.id WHERE j.cid = ?`, c[0]).Scan(&signed); err != nil {
			return nil, err
		}
		out[c[0]] = signed
	}
	return out, nil
}
