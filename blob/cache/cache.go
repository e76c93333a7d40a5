// Package cache owns a client's on-disk cache of blob data, keyed by CID:
// verified chunks, under their chunk CID, and assembled blobs, under their
// manifest CID, which a runner copies into a job's work directory. Every
// write goes to a temporary file that is synced and then renamed into
// place, so a crash leaves no half-written entry under a CID's name; every
// read is verified against the CID or the manifest, and an entry that
// fails is deleted and reported. The total size stays under a bound: the
// least recently used entries are evicted first.
package cache

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
)

// Names in the cache directory.
const (
	blobSuffix = ".blob" // an assembled blob: "<manifest CID>.blob"
	tempPrefix = ".tmp-" // a write in progress, removed by Open
)

// ErrNotFound reports an entry the cache does not hold.
var ErrNotFound = errors.New("not in the blob cache")

// ErrCorrupt reports a cached entry that failed verification on read; the
// cache deleted it.
var ErrCorrupt = errors.New("cached blob data failed verification")

// ErrTooLarge reports an entry larger than the cache's bound.
var ErrTooLarge = errors.New("entry larger than the blob cache")

// Cache is an on-disk, size-bounded cache of chunks and assembled blobs.
// Its methods are safe for concurrent use; one directory must be used by
// one Cache at a time.
type Cache struct {
	dir string
	max int64 // bytes

	mu      sync.Mutex
	lru     *list.List               // *entry, most recently used first
	entries map[string]*list.Element // by file name
	size    int64                    // bytes, summed over entries
	evicted int
	corrupt int
}

type entry struct {
	name string
	size int64 // bytes
}

// Stats are a cache's counters.
type Stats struct {
	Entries int
	Bytes   int64 // held, summed over entries
	Evicted int   // entries evicted for space since Open
	Corrupt int   // entries deleted since Open because they failed verification
}

// Open opens (creating it if need be) the cache in dir, holding at most
// maxBytes bytes. It removes writes a crash interrupted, takes the
// entries' modification times as their last use, and evicts down to the
// bound. Files whose names are not CIDs it leaves alone.
func Open(dir string, maxBytes int64) (*Cache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("open blob cache %s: bound of %d bytes", dir, maxBytes)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open blob cache: %w", err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open blob cache: %w", err)
	}
	type found struct {
		entry
		used time.Time
	}
	var all []found
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, tempPrefix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("open blob cache: remove interrupted write: %w", err)
			}
			continue
		}
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() || !isEntryName(name) {
			continue
		}
		all = append(all, found{entry{name, info.Size()}, info.ModTime()})
	}
	slices.SortFunc(all, func(a, b found) int { return b.used.Compare(a.used) })
	c := &Cache{dir: dir, max: maxBytes, lru: list.New(), entries: make(map[string]*list.Element)}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range all {
		c.entries[f.name] = c.lru.PushBack(&entry{f.name, f.size})
		c.size += f.size
	}
	c.evictLocked()
	return c, nil
}

// isEntryName reports whether name is a chunk CID or a manifest CID with
// the blob suffix, each in its canonical string form.
func isEntryName(name string) bool {
	base, isBlob := strings.CutSuffix(name, blobSuffix)
	id, err := cid.Decode(base)
	if err != nil || id.String() != base {
		return false
	}
	if isBlob {
		_, err = blob.ParseManifestCID(id.Bytes())
	} else {
		_, err = blob.ParseChunkCID(id.Bytes())
	}
	return err == nil
}

func blobName(m *blob.Manifest) string { return m.CID().String() + blobSuffix }

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Stats reports the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: len(c.entries), Bytes: c.size, Evicted: c.evicted, Corrupt: c.corrupt}
}

// Has reports whether the cache holds the chunk id, without reading or
// verifying it.
func (c *Cache) Has(id cid.Cid) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[id.String()]
	return ok
}

// Get reads the chunk id and verifies it: ErrNotFound if the cache does
// not hold it, ErrCorrupt (and the entry deleted) if its bytes no longer
// hash to id.
func (c *Cache) Get(id cid.Cid) ([]byte, error) {
	if _, err := blob.ParseChunkCID(id.Bytes()); err != nil {
		return nil, fmt.Errorf("blob cache get: %w", err)
	}
	name := id.String()
	data, err := c.read(name)
	if err != nil {
		return nil, fmt.Errorf("blob cache get chunk %s: %w", id, err)
	}
	if err := blob.VerifyChunk(id, data); err != nil {
		c.dropCorrupt(name)
		return nil, fmt.Errorf("blob cache get chunk %s: %w (deleted): %v", id, ErrCorrupt, err)
	}
	return data, nil
}

// Put stores the chunk id, after checking that data hash to it. A chunk
// the cache already holds is only marked used.
func (c *Cache) Put(id cid.Cid, data []byte) error {
	if err := blob.VerifyChunk(id, data); err != nil {
		return fmt.Errorf("blob cache put: %w", err)
	}
	if err := c.write(id.String(), data); err != nil {
		return fmt.Errorf("blob cache put chunk %s: %w", id, err)
	}
	return nil
}

// PutBlob stores the assembled blob m lists, after checking data against
// m, drops the chunks of m it held (the blob holds their bytes), and
// returns the assembled file's path.
func (c *Cache) PutBlob(m *blob.Manifest, data []byte) (string, error) {
	if err := blob.VerifyBlob(m, data); err != nil {
		return "", fmt.Errorf("blob cache put: %w", err)
	}
	name := blobName(m)
	if err := c.write(name, data); err != nil {
		return "", fmt.Errorf("blob cache put blob %s: %w", m.CID(), err)
	}
	cids, err := m.ChunkCIDs()
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	for _, id := range cids {
		c.removeLocked(id.String())
	}
	c.mu.Unlock()
	return filepath.Join(c.dir, name), nil
}

// Blob reads the assembled blob m lists and verifies it against m,
// returning its path in the cache and its bytes: ErrNotFound if the cache
// does not hold it, ErrCorrupt (and the entry deleted) if it fails.
func (c *Cache) Blob(m *blob.Manifest) (path string, data []byte, err error) {
	if err := m.Validate(); err != nil {
		return "", nil, fmt.Errorf("blob cache get blob: %w", err) // not the entry's fault
	}
	name := blobName(m)
	data, err = c.read(name)
	if err != nil {
		return "", nil, fmt.Errorf("blob cache get blob %s: %w", m.CID(), err)
	}
	if err := blob.VerifyBlob(m, data); err != nil {
		c.dropCorrupt(name)
		return "", nil, fmt.Errorf("blob cache get blob %s: %w (deleted): %v", m.CID(), ErrCorrupt, err)
	}
	return filepath.Join(c.dir, name), data, nil
}

// BlobPath is the path of the assembled blob m lists, verified as Blob
// verifies it: what a runner copies into a job's work directory. The
// cache may evict the file later; copy it, do not keep the path.
func (c *Cache) BlobPath(m *blob.Manifest) (string, error) {
	path, _, err := c.Blob(m)
	return path, err
}

// read marks the entry name used and reads it: at most one byte more than
// it held when written, so a file grown behind the cache's back fails
// verification without being read whole.
func (c *Cache) read(name string) ([]byte, error) {
	c.mu.Lock()
	el, ok := c.entries[name]
	var size int64
	if ok {
		c.lru.MoveToFront(el)
		size = el.Value.(*entry).size
	}
	c.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	path := filepath.Join(c.dir, name)
	data, err := readAtMost(path, size+1)
	if errors.Is(err, fs.ErrNotExist) {
		c.mu.Lock()
		c.removeLocked(name) // deleted behind the cache's back
		c.mu.Unlock()
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // the last use, for the next Open's order; best effort
	return data, nil
}

// readAtMost reads up to limit bytes of the file at path.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// write stores data under name: to a temporary file, synced, then renamed
// into place under the lock (so eviction and renames never interleave),
// then the directory synced so the rename lasts.
func (c *Cache) write(name string, data []byte) error {
	if int64(len(data)) > c.max {
		return fmt.Errorf("%w: %d bytes (bound %d)", ErrTooLarge, len(data), c.max)
	}
	tmp, err := writeTemp(c.dir, data)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if el, ok := c.entries[name]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		return os.Remove(tmp)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, name)); err != nil {
		c.mu.Unlock()
		_ = os.Remove(tmp)
		return fmt.Errorf("rename into place: %w", err)
	}
	c.entries[name] = c.lru.PushFront(&entry{name, int64(len(data))})
	c.size += int64(len(data))
	c.evictLocked()
	c.mu.Unlock()
	syncDir(c.dir)
	return nil
}

// writeTemp writes data to a new temporary file in dir and syncs it.
func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("create temporary file: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("write temporary file %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// syncDir syncs a directory so the renames in it last a crash; best
// effort, since not every platform can sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// dropCorrupt deletes an entry that failed verification.
func (c *Cache) dropCorrupt(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.removeLocked(name) {
		c.corrupt++
	}
}

// removeLocked deletes the entry name, if held, and reports whether it was.
func (c *Cache) removeLocked(name string) bool {
	el, ok := c.entries[name]
	if !ok {
		return false
	}
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, name)
	c.size -= e.size
	_ = os.Remove(filepath.Join(c.dir, name))
	return true
}

// evictLocked evicts the least recently used entries until the cache is
// within its bound.
func (c *Cache) evictLocked() {
	for c.size > c.max {
		back := c.lru.Back()
		if back == nil {
			return
		}
		c.removeLocked(back.Value.(*entry).name)
		c.evicted++
	}
}
