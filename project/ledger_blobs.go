package project

import (
	"fmt"
	"time"
)

// The blobs the project uploaded (blobs: the manifest, and when it was
// withdrawn) and the units that name them (unit_blobs): a blob is
// withdrawn from the overlay once every unit naming it is valid — no copy
// will need it again (Project.withdrawBlobs).

// BlobUse is one blob the project uploaded, by key, with its encoded
// manifest and when the statement it was uploaded with was made (Unix ms).
type BlobUse struct {
	Key, Manifest []byte
	Created       int64
}

// RecordBlobs records the blobs each unit names (by unit ID), with their
// manifests, in one transaction. A blob named again after it was
// withdrawn (uploaded again for new units) counts as live again.
func (l *Ledger) RecordBlobs(named map[int64][]BlobUse) error {
	if len(named) == 0 {
		return nil
	}
	tx, err := l.db.Begin()
	if err != nil {
		return fmt.Errorf("ledger: record blobs: %w", err)
	}
	defer tx.Rollback()
	for unit, uses := range named {
		for _, b := range uses {
			if _, err := tx.Exec(`INSERT INTO blobs(key, manifest, created) VALUES(?, ?, ?)
				ON CONFLICT(key) DO UPDATE SET withdrawn = NULL, manifest = excluded.manifest, created = max(created, excluded.created)`,
				b.Key, b.Manifest, b.Created); err != nil {
				return fmt.Errorf("ledger: record blob: %w", err)
			}
			if _, err := tx.Exec(`INSERT INTO unit_blobs(unit, key) VALUES(?, ?) ON CONFLICT(unit, key) DO NOTHING`, unit, b.Key); err != nil {
				return fmt.Errorf("ledger: record unit %d's blob: %w", unit, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: record blobs: %w", err)
	}
	return nil
}

// Withdrawable lists the live blobs every unit naming them is valid.
func (l *Ledger) Withdrawable() ([]BlobUse, error) {
	rows, err := l.db.Query(`SELECT b.key, b.manifest, b.created FROM blobs b WHERE b.withdrawn IS NULL AND NOT EXISTS (
		SELECT 1 FROM unit_blobs ub JOIN units u ON u.id = ub.unit WHERE ub.key = b.key AND u.status != ?)`, UnitValid)
	if err != nil {
		return nil, fmt.Errorf("ledger: blobs to withdraw: %w", err)
	}
	defer rows.Close()
	var out []BlobUse
	for rows.Next() {
		var b BlobUse
		if err := rows.Scan(&b.Key, &b.Manifest, &b.Created); err != nil {
			return nil, fmt.Errorf("ledger: blobs to withdraw: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// MarkWithdrawn records blob key as withdrawn at now.
func (l *Ledger) MarkWithdrawn(key []byte, now time.Time) error {
	if _, err := l.db.Exec(`UPDATE blobs SET withdrawn = ? WHERE key = ?`, now.UnixMilli(), key); err != nil {
		return fmt.Errorf("ledger: mark blob withdrawn: %w", err)
	}
	return nil
}

// LiveBlobs is how many recorded blobs are not withdrawn.
func (l *Ledger) LiveBlobs() (int, error) {
	var n int
	err := l.db.QueryRow(`SELECT COUNT(*) FROM blobs WHERE withdrawn IS NULL`).Scan(&n)
	return n, err
}
