package grind

import (
	"context"
	"crypto/rand"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/up-pool/up/dht/keyspace"
)

// DefaultBatch is the default number of table points per batch of a
// Secp256k1 worker; a batch yields 6·(2·Batch+1) candidates.
const DefaultBatch = 512

// MaxBatch bounds Secp256k1.Batch (larger values are clamped to it).
const MaxBatch = 1 << 12

// Secp256k1 grinds secp256k1 identities. Each worker starts at a random
// scalar k with centre point B = k·G and, per batch, computes B and B ± j·G
// for j = 1..Batch by affine addition, sharing one field inversion
// (Montgomery's batch trick) among all the batch's additions (B + j·G and
// B - j·G even share a denominator). Each point P = s·G so computed yields six
// candidates almost for free: ±P, ±λP = (β·x, ±y) and ±λ²P = (β²·x, ±y),
// using the curve's endomorphism and negation (one field multiplication each
// for β·x and β²·x, none for the sign, which only flips the parity byte). A
// hit's private key is ±λ^e·(k ± j) mod N. Then B moves on by (2·Batch+1)·G.
type Secp256k1 struct {
	// Workers is the number of goroutines; 0 means GOMAXPROCS.
	Workers int
	// Rand supplies the starting scalars; nil means crypto/rand. A seeded
	// reader with Workers = 1 makes a search replay exactly.
	Rand io.Reader
	// Batch is the number of table points per batch; 0 means DefaultBatch.
	Batch int
}

// Grind searches until a candidate's peer ID position lies in target, or ctx
// is done (then it returns ctx.Err() with Tries and Elapsed set). Workers
// start at independent random scalars; the first hit stops the others.
func (g Secp256k1) Grind(ctx context.Context, target keyspace.Region) (Result, error) {
	start := time.Now()
	workers := g.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	r := &lockedReader{r: g.Rand}
	if r.r == nil {
		r.r = rand.Reader
	}
	tab := tableFor(g.Batch)
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = newWorker(tab, r)
		if err := ws[i].reseed(); err != nil {
			return Result{Elapsed: time.Since(start)}, err
		}
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		tries atomic.Uint64
		once  sync.Once
		found Result
		ferr  error
		wg    sync.WaitGroup
	)
	for _, w := range ws {
		wg.Go(func() {
			for wctx.Err() == nil {
				n, hit, err := w.batch(&target)
				tries.Add(n)
				if err != nil || hit {
					once.Do(func() {
						ferr = err
						if hit {
							found.Key, found.ID, ferr = w.key()
						}
					})
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	found.Tries, found.Elapsed = tries.Load(), time.Since(start)
	if found.Key == nil && ferr == nil {
		ferr = ctx.Err() // only the caller's context stops a search without a hit
	}
	if ferr != nil {
		return Result{Tries: found.Tries, Elapsed: found.Elapsed}, ferr
	}
	return found, nil
}

// lockedReader serialises reads from a reader shared by the workers.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

// Read fills p completely from the shared reader, under the lock.
func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return io.ReadFull(l.r, p)
}
