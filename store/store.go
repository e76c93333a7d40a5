// Package store owns a party's embedded on-disk key-value store (pebble):
// opening it in a data directory, namespaced keys, durable single writes
// and atomic batches (synced each, or by a periodic group sync), prefix
// scans. What lives in it (jobs, known peers) belongs to the packages that
// write it.
package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// ErrNotFound reports a missing key.
var ErrNotFound = errors.New("not found")

// ErrClosed reports an operation on a closed store (a request handler
// that outlived its node's shutdown, say): an error, where pebble panics.
var ErrClosed = errors.New("store is closed")

// Options configures a Store. The zero value syncs every write.
type Options struct {
	// SyncInterval, when positive, trades the fsync of each write for one
	// group sync of the write-ahead log every SyncInterval: a write is in
	// the OS's page cache when it returns (a crash of the process loses
	// nothing once pebble has written it out, which it does at once), and
	// on disk within SyncInterval (what a power failure can take). For
	// state replicated on several machines, which repair each other. Zero:
	// each Put, Delete and synced Commit waits for its own fsync.
	SyncInterval time.Duration
}

// Store is an open pebble database. Safe for concurrent use.
type Store struct {
	db    *pebble.DB
	path  string
	write *pebble.WriteOptions // Sync, or NoSync with a group syncer

	inflight atomic.Int64 // operations under way (enter/leave)
	closed   atomic.Bool  // set by Close before it waits for inflight to drain

	syncs   atomic.Int64 // group syncs done
	dirty   atomic.Bool  // written since the last group sync
	stop    chan struct{}
	stopped sync.WaitGroup
}

// pebbleOptions are pebble's defaults with a Bloom filter (10 bits per
// key, ~1 % false positives) in every level's tables: a node asks its
// store for keys it does not have on every job it takes (the gone
// records of jobs it never held, pool.gone), and without filters each
// such miss searches every table that may hold the key. Tables written
// before filters were set have none and are read as before.
func pebbleOptions() *pebble.Options {
	o := &pebble.Options{Logger: quietLogger{}}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// Open opens (creating if needed) the store in dir; every write is synced.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// OpenWith opens (creating if needed) the store in dir with options.
func OpenWith(dir string, o Options) (*Store, error) {
	if o.SyncInterval < 0 {
		return nil, fmt.Errorf("open store %s: sync interval %s is negative", dir, o.SyncInterval)
	}
	db, err := pebble.Open(dir, pebbleOptions())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &Store{db: db, path: dir, write: pebble.Sync}
	if o.SyncInterval > 0 {
		s.write = pebble.NoSync
		s.stop = make(chan struct{})
		s.stopped.Add(1)
		go s.syncLoop(o.SyncInterval)
	}
	return s, nil
}

// syncLoop syncs the write-ahead log every interval when something was
// written since the last sync.
func (s *Store) syncLoop(interval time.Duration) {
	defer s.stopped.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.Sync()
		}
	}
}

// Sync makes every write so far durable (a no-op when none is pending).
func (s *Store) Sync() error {
	if !s.dirty.Swap(false) {
		return nil
	}
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		s.dirty.Store(true)
		return fmt.Errorf("sync store %s: %w", s.path, err)
	}
	s.syncs.Add(1)
	return nil
}

// GroupSyncs is how many group syncs the store has done (0 when every
// write syncs itself).
func (s *Store) GroupSyncs() int64 { return s.syncs.Load() }

// wrote notes an unsynced write for the group syncer.
func (s *Store) wrote() {
	if s.stop != nil {
		s.dirty.Store(true)
	}
}

// enter starts an operation; false when the store is closed (or closing).
// Every enter that returned true is matched by a leave.
func (s *Store) enter() bool {
	s.inflight.Add(1)
	if s.closed.Load() {
		s.inflight.Add(-1)
		return false
	}
	return true
}

func (s *Store) leave() { s.inflight.Add(-1) }

// Close syncs pending writes, flushes and closes the store. Operations
// already under way finish first; later ones get ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	for s.inflight.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	if s.stop != nil {
		close(s.stop)
		s.stopped.Wait()
		if err := s.Sync(); err != nil {
			_ = s.db.Close()
			return err
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Get returns a copy of the value at key, or ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	if !s.enter() {
		return nil, ErrClosed
	}
	defer s.leave()
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

// Put writes key=value durably (synced, or by the next group sync).
func (s *Store) Put(key, value []byte) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	if err := s.db.Set(key, value, s.write); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	s.wrote()
	return nil
}

// Delete removes key durably (synced, or by the next group sync).
func (s *Store) Delete(key []byte) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	if err := s.db.Delete(key, s.write); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	s.wrote()
	return nil
}

// Batch collects writes that commit atomically.
type Batch struct {
	b *pebble.Batch
	s *Store
}

// NewBatch starts an atomic batch.
func (s *Store) NewBatch() *Batch { return &Batch{b: s.db.NewBatch(), s: s} }

// Put adds key=value to the batch.
func (b *Batch) Put(key, value []byte) { _ = b.b.Set(key, value, nil) }

// Delete adds the removal of key to the batch.
func (b *Batch) Delete(key []byte) { _ = b.b.Delete(key, nil) }

// Len is the number of writes in the batch.
func (b *Batch) Len() int { return int(b.b.Count()) }

// Commit writes the batch atomically; sync makes it durable before return
// (or by the next group sync, when the store has a sync interval).
func (b *Batch) Commit(sync bool) error {
	if !b.s.enter() {
		_ = b.b.Close()
		return ErrClosed
	}
	defer b.s.leave()
	opt := pebble.NoSync
	if sync {
		opt = b.s.write
	}
	if err := b.b.Commit(opt); err != nil {
		return fmt.Errorf("commit batch of %d writes: %w", b.b.Count(), err)
	}
	b.s.wrote()
	return b.b.Close()
}

// Scan calls f for every key with the prefix, in key order, until f
// returns false. Key and value are valid only during the call.
func (s *Store) Scan(prefix []byte, f func(key, value []byte) bool) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
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
