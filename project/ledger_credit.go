package project

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/credit"
)

// Credit receipts (issue 22): per client, the ledger signs one receipt
// per issue covering every result graded valid since its last, numbered
// 1, 2, … per client, and keeps each until the overlay took it
// (published). results.receipt names the receipt that credited a result,
// so none is credited twice and none is skipped, across crashes: the
// receipt and the marks are one transaction.
const creditSchema = `
CREATE TABLE IF NOT EXISTS credit_receipts(
	client_key BLOB NOT NULL,
	seq        INTEGER NOT NULL,
	total      INTEGER NOT NULL,
	results    INTEGER NOT NULL,
	signed     BLOB NOT NULL,
	created    INTEGER NOT NULL,
	published  INTEGER,
	PRIMARY KEY(client_key, seq));
CREATE INDEX IF NOT EXISTS credit_unpublished ON credit_receipts(client_key, seq) WHERE published IS NULL;
CREATE INDEX IF NOT EXISTS results_unreceipted ON results(client_key, harvested) WHERE valid = 1 AND receipt IS NULL;`

// migrateReceipts adds results.receipt (NULL: not yet credited by a
// receipt) and the receipts table to a ledger without them.
func migrateReceipts(db *sql.DB) error {
	var has bool
	if err := db.QueryRow(`SELECT EXISTS(SELECT 1 FROM pragma_table_info('results') WHERE name = 'receipt')`).Scan(&has); err != nil {
		return fmt.Errorf("read the results table's columns: %w", err)
	}
	if !has {
		if _, err := db.Exec(`ALTER TABLE results ADD COLUMN receipt INTEGER`); err != nil {
			return fmt.Errorf("add results.receipt: %w", err)
		}
	}
	if _, err := db.Exec(creditSchema); err != nil {
		return fmt.Errorf("credit receipts table: %w", err)
	}
	return nil
}

// ReceiptSigner signs a receipt as the project: its name and certificate
// reference are filled in by the signer.
type ReceiptSigner func(r *credit.Receipt) (*credit.Signed, error)

// issuePage bounds the valid results one IssueReceipts transaction
// credits.
const issuePage = 4096

// uncredited is a valid result no receipt credits yet.
type uncredited struct {
	job       int64 // its job's id
	cid       string
	client    []byte
	unit      int64
	harvested int64
}

// IssueReceipts signs, per client, a receipt for the results graded
// valid and not yet credited, credit.MaxEntries per receipt, one credit
// each, and stores them unpublished with the results marked, one
// transaction per page. It returns how many receipts it signed.
func (l *Ledger) IssueReceipts(sign ReceiptSigner, now time.Time) (int, error) {
	return l.issueAll(sign, now, nil)
}

// IssueReceiptsTo is IssueReceipts for one client only: the early
// receipt of a client owed much credit (ClientsOwedCredit).
func (l *Ledger) IssueReceiptsTo(client []byte, sign ReceiptSigner, now time.Time) (int, error) {
	if len(client) == 0 {
		return 0, fmt.Errorf("ledger: issue credit receipts: no client key")
	}
	return l.issueAll(sign, now, client)
}

// issueAll issues pages of receipts until none is left: of every client
// when client is nil, else of client only.
func (l *Ledger) issueAll(sign ReceiptSigner, now time.Time, client []byte) (int, error) {
	issued := 0
	for {
		n, more, err := l.issuePage(sign, now, client)
		issued += n
		if err != nil || !more {
			return issued, err
		}
	}
}

const (
	qUncredited = `SELECT r.job, r.cid, r.client_key, j.unit, r.harvested FROM results r INDEXED BY results_unreceipted
		JOIN jobs j ON j.id = r.job WHERE r.valid = 1 AND r.receipt IS NULL ORDER BY r.client_key, r.harvested, r.job LIMIT ?`
	qUncreditedOf = `SELECT r.job, r.cid, r.client_key, j.unit, r.harvested FROM results r INDEXED BY results_unreceipted
		JOIN jobs j ON j.id = r.job WHERE r.client_key = ? AND r.valid = 1 AND r.receipt IS NULL ORDER BY r.harvested, r.job LIMIT ?`
	// ?1 the receipt, ?2 [job id, ...]
	qMarkReceipted = `UPDATE results SET receipt = ?1 WHERE job IN (SELECT value FROM json_each(?2))`
	// qOwed counts a client's uncredited valid results up to a bound,
	// reading no more of the index than that.
	qOwed = `SELECT COUNT(*) FROM (SELECT 1 FROM results INDEXED BY results_unreceipted
		WHERE client_key = ? AND valid = 1 AND receipt IS NULL LIMIT ?)`
	qLastReceipt   = `SELECT seq, total, results FROM credit_receipts WHERE client_key = ? ORDER BY seq DESC LIMIT 1`
	qInsertReceipt = `INSERT INTO credit_receipts(client_key, seq, total, results, signed, created) VALUES(?,?,?,?,?,?)`
	qUnpublished   = `SELECT client_key, seq, signed FROM credit_receipts INDEXED BY credit_unpublished
		WHERE published IS NULL ORDER BY client_key, seq LIMIT ?`
	qUnpublishedOf = `SELECT client_key, seq, signed FROM credit_receipts INDEXED BY credit_unpublished
		WHERE client_key = ? AND published IS NULL ORDER BY seq LIMIT ?`
	qMarkPublished = `UPDATE credit_receipts SET published = ?1 WHERE client_key = ?2 AND seq IN (SELECT value FROM json_each(?3))`
)

// creditTxQueries are the statements a receipt's issue runs in its
// transaction, prepared when the ledger opens (txQueries): a harvest
// issues receipts every pass, and SQLite's parser would cost more than
// they take to run.
var creditTxQueries = []string{qUncredited, qUncreditedOf, qLastReceipt, qInsertReceipt, qMarkReceipted}

// query runs q, prepared once (stmt), outside a transaction.
func (l *Ledger) query(q string, args ...any) (*sql.Rows, error) {
	s, err := l.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.Query(args...)
}

// ClientsOwedCredit returns those of clients (keys; repeats are asked
// once) that have at least least valid results no receipt credits yet,
// in the order given. Each client costs one query reading at most least
// index entries.
func (l *Ledger) ClientsOwedCredit(clients [][]byte, least int) ([][]byte, error) {
	if least < 1 {
		least = 1
	}
	var owed [][]byte
	seen := make(map[string]bool, len(clients))
	for _, c := range clients {
		if len(c) == 0 || seen[string(c)] {
			continue
		}
		seen[string(c)] = true
		var n int
		s, err := l.stmt(qOwed)
		if err != nil {
			return owed, err
		}
		if err := s.QueryRow(c, least).Scan(&n); err != nil {
			return owed, fmt.Errorf("ledger: uncredited results of client %x: %w", c[:min(6, len(c))], err)
		}
		if n >= least {
			owed = append(owed, c)
		}
	}
	return owed, nil
}

func (l *Ledger) issuePage(sign ReceiptSigner, now time.Time, client []byte) (issued int, more bool, err error) {
	tx, err := l.db.Begin()
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	var rows *sql.Rows
	if client == nil {
		rows, err = l.txQuery(tx, qUncredited, issuePage)
	} else {
		rows, err = l.txQuery(tx, qUncreditedOf, client, issuePage)
	}
	if err != nil {
		return 0, false, fmt.Errorf("ledger: results to credit: %w", err)
	}
	var all []uncredited
	for rows.Next() {
		var u uncredited
		if err := rows.Scan(&u.job, &u.cid, &u.client, &u.unit, &u.harvested); err != nil {
			rows.Close()
			return 0, false, err
		}
		all = append(all, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	for start := 0; start < len(all); {
		end := start + 1
		for end < len(all) && end-start < credit.MaxEntries && string(all[end].client) == string(all[start].client) {
			end++
		}
		if err := l.issueOne(tx, all[start:end], sign, now); err != nil {
			return 0, false, err
		}
		issued++
		start = end
	}
	if issued == 0 {
		return 0, false, nil
	}
	if err := tx.Commit(); err != nil {
		return 0, false, fmt.Errorf("ledger: store %d credit receipts: %w", issued, err)
	}
	return issued, len(all) == issuePage, nil
}

// issueOne signs and stores the receipt crediting us (one client's) on
// top of the client's last, and marks the results credited.
func (l *Ledger) issueOne(tx *sql.Tx, us []uncredited, sign ReceiptSigner, now time.Time) error {
	client := us[0].client
	var seq, total, results uint64
	last, err := l.txStmt(tx, qLastReceipt)
	if err != nil {
		return err
	}
	err = last.QueryRow(client).Scan(&seq, &total, &results)
	if err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("ledger: last credit receipt of client %x: %w", client[:min(6, len(client))], err)
	}
	r := &credit.Receipt{Version: credit.Version, Client: client, Seq: seq + 1, Total: total + uint64(len(us)),
		Results: results + uint64(len(us)), Created: now.UnixMilli()}
	jobs := make([]int64, len(us))
	for i, u := range us {
		c, err := cid.Decode(u.cid)
		if err != nil {
			return fmt.Errorf("ledger: result %s: %w", u.cid, err)
		}
		r.Entries = append(r.Entries, credit.Entry{Unit: u.unit, Job: c.Bytes(), Amount: 1, At: u.harvested})
		jobs[i] = u.job
	}
	s, err := sign(r)
	if err != nil {
		return fmt.Errorf("sign credit receipt %d of client %x: %w", r.Seq, client[:min(6, len(client))], err)
	}
	if _, err := l.exec(tx, qInsertReceipt, client, r.Seq, r.Total, r.Results, s.Encode(), r.Created); err != nil {
		return fmt.Errorf("ledger: store credit receipt %d: %w", r.Seq, err)
	}
	list, err := jsonArg(jobs)
	if err != nil {
		return err
	}
	if _, err := l.exec(tx, qMarkReceipted, r.Seq, list); err != nil {
		return fmt.Errorf("ledger: mark %d results credited: %w", len(jobs), err)
	}
	return nil
}

// UnpublishedReceipt is a signed receipt the overlay has not taken yet.
type UnpublishedReceipt struct {
	Client []byte
	Seq    uint64
	Signed []byte
}

// UnpublishedReceipts returns up to limit receipts not yet published, by
// client and sequence number.
func (l *Ledger) UnpublishedReceipts(limit int) ([]UnpublishedReceipt, error) {
	rows, err := l.query(qUnpublished, limit)
	return scanUnpublished(rows, err)
}

// UnpublishedReceiptsOf is UnpublishedReceipts of client only.
func (l *Ledger) UnpublishedReceiptsOf(client []byte, limit int) ([]UnpublishedReceipt, error) {
	rows, err := l.query(qUnpublishedOf, client, limit)
	return scanUnpublished(rows, err)
}

func scanUnpublished(rows *sql.Rows, err error) ([]UnpublishedReceipt, error) {
	if err != nil {
		return nil, fmt.Errorf("ledger: unpublished credit receipts: %w", err)
	}
	defer rows.Close()
	var out []UnpublishedReceipt
	for rows.Next() {
		var u UnpublishedReceipt
		if err := rows.Scan(&u.Client, &u.Seq, &u.Signed); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// MarkPublished records that the overlay took client's receipts seqs.
func (l *Ledger) MarkPublished(client []byte, seqs []uint64, now time.Time) error {
	list, err := jsonArg(seqs)
	if err != nil {
		return err
	}
	s, err := l.stmt(qMarkPublished)
	if err != nil {
		return err
	}
	_, err = s.Exec(now.UnixMilli(), client, list)
	if err != nil {
		return fmt.Errorf("ledger: mark %d credit receipts published: %w", len(seqs), err)
	}
	return nil
}

// ClientReceipts returns client's receipts, oldest first.
func (l *Ledger) ClientReceipts(client []byte) ([][]byte, error) {
	rows, err := l.db.Query(`SELECT signed FROM credit_receipts WHERE client_key = ? ORDER BY seq`, client)
	if err != nil {
		return nil, fmt.Errorf("ledger: credit receipts: %w", err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
