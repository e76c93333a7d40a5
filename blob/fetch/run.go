package fetch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
)

// run is one fetch in progress: which source is busy, which lied, which
// failed, shared by the workers under mu.
type run struct {
	f   *Fetcher
	m   *blob.Manifest
	key cid.Cid
	res *Result

	mu       sync.Mutex
	inflight []int  // requests in flight, per source
	lied     []bool // sent bad bytes during this fetch: asked no more
	failures []int  // consecutive failed requests, per source
	err      error  // the first error that ends the fetch
}

func (f *Fetcher) newRun(m *blob.Manifest, res *Result) *run {
	n := len(f.Sources)
	return &run{f: f, m: m, key: m.CID(), res: res,
		inflight: make([]int, n), lied: make([]bool, n), failures: make([]int, n)}
}

// fetchAll fetches the tasks with at most Concurrency in flight; the first
// chunk no source has ends the fetch and is its error.
func (r *run) fetchAll(ctx context.Context, tasks []*task) error {
	if len(tasks) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := r.f.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	queue := make(chan int, len(tasks))
	for i := range tasks {
		queue <- i
	}
	close(queue)
	var wg sync.WaitGroup
	var done atomic.Int64
	for range min(workers, len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range queue {
				if ctx.Err() != nil {
					return
				}
				if err := r.fetchChunk(ctx, i, tasks[i]); err != nil {
					r.fail(err)
					cancel()
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil && done.Load() < int64(len(tasks)) {
		// The caller's context ended between two chunks.
		r.err = fmt.Errorf("fetch blob %s: %d of %d chunks fetched: %w", r.key, done.Load(), len(tasks), ctx.Err())
	}
	return r.err
}

// fail records the error that ends the fetch, if it is the first.
func (r *run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// fetchChunk asks the sources for one chunk in turn, best first, until
// one sends bytes that verify; every source is asked at most once.
func (r *run) fetchChunk(ctx context.Context, n int, t *task) error {
	tried := make([]bool, len(r.f.Sources))
	var attempts []Attempt
	for {
		i, skipped, ok := r.pick(n, tried)
		attempts = append(attempts, skipped...)
		if !ok {
			return &ChunkError{Blob: r.key, Index: t.indices[0], Chunk: t.chunk, Attempts: attempts}
		}
		tried[i] = true
		data, err := r.ask(ctx, i, t.chunk)
		if ctx.Err() != nil {
			return fmt.Errorf("fetch blob %s: %w", r.key, ctx.Err())
		}
		if err == nil {
			var fatal error
			if err, fatal = r.check(i, t, data); fatal != nil {
				return fatal
			}
		}
		if err != nil {
			attempts = append(attempts, Attempt{Source: r.f.Sources[i].ID(), Err: err})
			continue
		}
		place(r.m, r.res.Data, t, data)
		r.cachePut(t.chunk, data)
		return nil
	}
}

// pick chooses the source to ask next for task n among those not tried:
// never one that lied; one whose last request failed only when no other
// is left; then the fewest requests in flight; then the source after n's
// turn in the rotation, so the tasks start spread over the sources. It
// returns the liars it skipped, as attempts, and counts the request as in
// flight.
func (r *run) pick(n int, tried []bool) (int, []Attempt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := len(r.f.Sources)
	best, bestKey := -1, [3]int{}
	var skipped []Attempt
	for k := range count {
		i := (n + k) % count
		if tried[i] {
			continue
		}
		if r.lied[i] {
			tried[i] = true
			skipped = append(skipped, Attempt{Source: r.f.Sources[i].ID(), Err: errDistrusted})
			continue
		}
		key := [3]int{min(r.failures[i], 1), r.inflight[i], k}
		if best < 0 || less(key, bestKey) {
			best, bestKey = i, key
		}
	}
	if best < 0 {
		return 0, skipped, false
	}
	r.inflight[best]++
	return best, skipped, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// ask requests chunk c of source i within the chunk timeout and records a
// failure against it.
func (r *run) ask(ctx context.Context, i int, c cid.Cid) ([]byte, error) {
	timeout := r.f.ChunkTimeout
	if timeout <= 0 {
		timeout = DefaultChunkTimeout
	}
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	data, err := r.f.Sources[i].GetChunk(reqCtx, c)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight[i]--
	if err != nil && ctx.Err() == nil {
		r.failures[i]++
		r.res.Sources[r.f.Sources[i].ID()].Failed++
	}
	return data, err
}

// check verifies that data are task t's chunk; bytes that are not are
// recorded against source i, which is then trusted no more. Bytes that
// hash to the chunk's CID but not to the length the manifest gives it are
// the manifest's fault, not the source's: they end the fetch (fatal).
func (r *run) check(i int, t *task, data []byte) (bad, fatal error) {
	id := r.f.Sources[i].ID()
	bad = blob.VerifyChunk(t.chunk, data)
	if want := r.m.ChunkLen(t.indices[0]); bad == nil && len(data) != want {
		return nil, fmt.Errorf("fetch blob %s: chunk %d (%s) is %d bytes, the manifest says %d",
			r.key, t.indices[0], t.chunk, len(data), want)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	stats := r.res.Sources[id]
	if bad != nil {
		r.lied[i] = true
		stats.Bad++
		stats.BadBytes += int64(len(data))
		r.res.Misbehaving = append(r.res.Misbehaving, Misbehaviour{Source: id, Chunk: t.chunk, Err: bad})
		return bad, nil
	}
	r.failures[i] = 0
	stats.Chunks++
	stats.Bytes += int64(len(data))
	return nil, nil
}

// cachePut stores a verified chunk, keeping the first failure.
func (r *run) cachePut(c cid.Cid, data []byte) {
	if r.f.Cache == nil {
		return
	}
	if err := r.f.Cache.Put(c, data); err != nil {
		r.mu.Lock()
		if r.res.CacheErr == nil {
			r.res.CacheErr = err
		}
		r.mu.Unlock()
	}
}
