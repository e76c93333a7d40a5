// Package fetch owns a client's download of a blob: every chunk its
// manifest lists, asked of the blob's replicas in parallel (a bounded
// number in flight, spread over the sources), each verified against its
// CID before it is used. A source that sends bad bytes is recorded as
// misbehaving, with the chunk, trusted no more during the fetch, and the
// chunk is asked of another; a fetch fails, naming the chunk, only when no
// source has a good copy. The cache, when there is one, is consulted first
// and filled as chunks arrive, so the next job needing the same blob costs
// no request at all.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blob/cache"
)

// Defaults of a Fetcher.
const (
	// DefaultConcurrency is how many chunks are in flight at once: enough
	// to keep r = 5 replicas busy with one or two requests each while at
	// most 8 MiB of chunks are being received.
	DefaultConcurrency = 8
	// DefaultChunkTimeout bounds one request for one chunk (1 MiB: 30 s is
	// 35 KB/s, a slow volunteer uplink); past it the chunk is asked of
	// another source.
	DefaultChunkTimeout = 30 * time.Second
)

// ErrNoGoodCopy reports a chunk that no source served with the right bytes.
var ErrNoGoodCopy = errors.New("no source has a good copy of the chunk")

// errDistrusted is the attempt of a source skipped because it sent bad
// bytes earlier in the fetch.
var errDistrusted = errors.New("skipped: sent bad bytes earlier in this fetch")

// Source is a place to ask for chunks: one replica of the blob. The
// network implementation asks a node over the overlay; tests use memory.
type Source interface {
	// ID names the source in results and errors, e.g. its peer ID.
	ID() string
	// GetChunk returns the bytes the source holds for chunk c, unverified.
	GetChunk(ctx context.Context, c cid.Cid) ([]byte, error)
}

// Fetcher downloads blobs from a set of sources.
type Fetcher struct {
	Sources      []Source
	Cache        *cache.Cache  // consulted first and filled; nil: none
	Concurrency  int           // chunks in flight at once; 0: DefaultConcurrency
	ChunkTimeout time.Duration // per request; 0: DefaultChunkTimeout
}

// SourceStats is what one source did during a fetch.
type SourceStats struct {
	Chunks   int   // good chunks it served
	Bytes    int64 // bytes of the good chunks
	Bad      int   // chunks whose bytes failed verification
	BadBytes int64 // bytes of the bad chunks
	Failed   int   // requests that returned an error or timed out
}

// Misbehaviour is a source caught sending bytes that are not the chunk's.
type Misbehaviour struct {
	Source string
	Chunk  cid.Cid
	Err    error // what the verification found
}

// Result is what a fetch got, and from whom.
type Result struct {
	Data         []byte                  // the blob's bytes
	Path         string                  // the assembled blob in the cache; "" without a cache
	FromCache    bool                    // the whole blob came from the cache: no request made
	CachedChunks int                     // chunks read from the cache
	Sources      map[string]*SourceStats // by Source.ID
	Misbehaving  []Misbehaviour
	CacheErr     error // the first failure to read or write the cache; the fetch went on
}

// Attempt is one source's answer for a chunk that no source had.
type Attempt struct {
	Source string
	Err    error
}

// ChunkError reports a chunk that no source served with the right bytes.
type ChunkError struct {
	Blob     cid.Cid // the manifest's CID
	Index    int     // the chunk's first place in the manifest
	Chunk    cid.Cid
	Attempts []Attempt // every source, with what it did
}

// Error names the blob, the chunk and what each source did.
func (e *ChunkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fetch blob %s: chunk %d (%s): %v", e.Blob, e.Index, e.Chunk, ErrNoGoodCopy)
	if len(e.Attempts) == 0 {
		b.WriteString(" (no sources)")
	}
	for i, a := range e.Attempts {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s: %v", sep, a.Source, a.Err)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrNoGoodCopy) hold.
func (e *ChunkError) Unwrap() error { return ErrNoGoodCopy }

// task is one distinct chunk to fetch and where it goes in the blob.
type task struct {
	chunk   cid.Cid
	indices []int // its places in the manifest (a chunk may repeat)
}

// Fetch downloads the blob m lists, returning its bytes. The result is
// returned with an error too: it says what each source did up to the
// failure. Chunks fetched before a failure stay in the cache, so a later
// fetch asks only for the rest.
func (f *Fetcher) Fetch(ctx context.Context, m *blob.Manifest) (*Result, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("fetch blob: %w", err)
	}
	key := m.CID()
	res := &Result{Sources: make(map[string]*SourceStats, len(f.Sources))}
	for _, s := range f.Sources {
		if _, dup := res.Sources[s.ID()]; dup {
			return nil, fmt.Errorf("fetch blob %s: two sources named %q", key, s.ID())
		}
		res.Sources[s.ID()] = &SourceStats{}
	}
	if f.Cache != nil {
		path, data, err := f.Cache.Blob(m)
		if err == nil {
			res.Data, res.Path, res.FromCache = data, path, true
			return res, nil
		}
		if !errors.Is(err, cache.ErrNotFound) {
			res.CacheErr = err
		}
	}
	res.Data = make([]byte, m.Size)
	pending := f.fromCache(m, res)
	if err := f.newRun(m, res).fetchAll(ctx, pending); err != nil {
		return res, err
	}
	if f.Cache != nil {
		path, err := f.Cache.PutBlob(m, res.Data)
		if err != nil && res.CacheErr == nil {
			res.CacheErr = err
		}
		res.Path = path
	}
	return res, nil
}

// fromCache places the chunks the cache holds and returns the tasks for
// the others, one per distinct chunk.
func (f *Fetcher) fromCache(m *blob.Manifest, res *Result) []*task {
	cids, _ := m.ChunkCIDs() // m validated
	byChunk := make(map[cid.Cid]*task, len(cids))
	var tasks []*task
	for i, c := range cids {
		if t, ok := byChunk[c]; ok {
			t.indices = append(t.indices, i)
			continue
		}
		t := &task{chunk: c, indices: []int{i}}
		byChunk[c] = t
		tasks = append(tasks, t)
	}
	if f.Cache == nil {
		return tasks
	}
	var pending []*task
	for _, t := range tasks {
		data, err := f.Cache.Get(t.chunk)
		if err == nil && len(data) == m.ChunkLen(t.indices[0]) {
			place(m, res.Data, t, data)
			res.CachedChunks += len(t.indices)
			continue
		}
		if err != nil && !errors.Is(err, cache.ErrNotFound) && res.CacheErr == nil {
			res.CacheErr = err
		}
		pending = append(pending, t)
	}
	return pending
}

// place copies a chunk's bytes to each of its places in the blob.
func place(m *blob.Manifest, out []byte, t *task, data []byte) {
	for _, i := range t.indices {
		copy(out[m.Offset(i):], data)
	}
}
