// Package store owns a party's embedded on-disk key-value store (pebble):
// opening it in a data directory, namespaced keys, synced single writes and
// atomic batches, prefix scans. What lives in it (jobs, known peers) belongs
// to the packages that write it.
package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// ErrNotFound reports a missing key.
var ErrNotFound = errors.New("not found")

// Store is an open pebble database. Safe for concurrent use.
type Store struct {
	db   *pebble.DB
	path string
}

// Open opens (creating if needed) the store in dir.
func Open(dir string) (*Store, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return &Store{db: db, path: dir}, nil
}

// Close flushes and closes the store.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Get returns a copy of the value at key, or ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// Put writes key=value and syncs it to disk before returning.
func (s *Store) Put(key, value []byte) error {
	if err := s.db.Set(key, value, pebble.Sync); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// Delete removes key, synced.
func (s *Store) Delete(key []byte) error {
	if err := s.db.Delete(key, pebble.Sync); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	return nil
}

// Batch collects writes that commit atomically.
type Batch struct{ b *pebble.Batch }

// NewBatch starts an atomic batch.
func (s *Store) NewBatch() *Batch { return &Batch{b: s.db.NewBatch()} }

// Put adds key=value to the batch.
func (b *Batch) Put(key, value []byte) { _ = b.b.Set(key, value, nil) }

// Delete adds the removal of key to the batch.
func (b *Batch) Delete(key []byte) { _ = b.b.Delete(key, nil) }

// Len is the number of writes in the batch.
func (b *Batch) Len() int { return int(b.b.Count()) }

// Commit writes the batch atomically; sync makes it durable before return.
func (b *Batch) Commit(sync bool) error {
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	if err := b.b.Commit(opt); err != nil {
		return fmt.Errorf("commit batch of %d writes: %w", b.b.Count(), err)
	}
	return b.b.Close()
}

// Scan calls f for every key with the prefix, in key order, until f
// returns false. Key and value are valid only during the call.
func (s *Store) Scan(prefix []byte, f func(key, value []byte) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("scan %q: %w", prefix, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("scan %q: %w", prefix, err)
		}
		if !f(it.Key(), v) {
			break
		}
	}
	return it.Close()
}

// prefixEnd is the smallest key greater than every key with the prefix
// (nil: no upper bound).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// Key joins a namespace and parts into one key: "ns/" + parts joined by
// "/". Parts may hold any bytes; namespaces keep writers apart.
func Key(ns string, parts ...[]byte) []byte {
	k := append([]byte(ns), '/')
	for i, p := range parts {
		if i > 0 {
			k = append(k, '/')
		}
		k = append(k, p...)
	}
	return k
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

var _ io.Closer = (*Store)(nil)
