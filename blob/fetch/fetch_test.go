package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blob/cache"
)

// memSource is a replica in memory. It can lie (alter the chunks it
// serves), be dead (refuse every request), hang (until the request's
// context ends) or miss chunks.
type memSource struct {
	id      string
	chunks  map[cid.Cid][]byte
	lieOn   func(cid.Cid) bool // alter these chunks
	dead    bool
	hang    bool
	missing map[cid.Cid]bool
	calls   atomic.Int64
}

func (s *memSource) ID() string { return s.id }

func (s *memSource) GetChunk(ctx context.Context, c cid.Cid) ([]byte, error) {
	s.calls.Add(1)
	switch {
	case s.dead:
		return nil, errors.New("connection refused")
	case s.hang:
		<-ctx.Done()
		return nil, ctx.Err()
	case s.missing[c]:
		return nil, fmt.Errorf("chunk %s not held", c)
	}
	data, ok := s.chunks[c]
	if !ok {
		return nil, fmt.Errorf("chunk %s not held", c)
	}
	data = bytes.Clone(data) // as if received over a stream
	if s.lieOn != nil && s.lieOn(c) && len(data) > 0 {
		data[len(data)/2] ^= 0x01
	}
	return data, nil
}

// testBlob is a blob of n seeded pseudo-random bytes, its manifest and
// chunks by CID.
func testBlob(t testing.TB, seed uint64, n int) ([]byte, *blob.Manifest, map[cid.Cid][]byte) {
	t.Helper()
	var key [32]byte
	key[0], key[1] = byte(seed), byte(n)
	data := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(data)
	m, chunks, err := blob.Split("lhc", blob.KindInput, data)
	if err != nil {
		t.Fatal(err)
	}
	return data, m, byCID(chunks)
}

func byCID(chunks [][]byte) map[cid.Cid][]byte {
	out := make(map[cid.Cid][]byte, len(chunks))
	for _, c := range chunks {
		out[blob.ChunkCID(c)] = c
	}
	return out
}

// replicas are r honest sources holding every chunk.
func replicas(r int, chunks map[cid.Cid][]byte) []*memSource {
	out := make([]*memSource, r)
	for i := range out {
		out[i] = &memSource{id: fmt.Sprintf("node%d", i), chunks: chunks}
	}
	return out
}

func sources(ms []*memSource) []Source {
	out := make([]Source, len(ms))
	for i, s := range ms {
		out[i] = s
	}
	return out
}

func totalCalls(ms []*memSource) int64 {
	var n int64
	for _, s := range ms {
		n += s.calls.Load()
	}
	return n
}

func mustFetch(t *testing.T, f *Fetcher, m *blob.Manifest, want []byte) *Result {
	t.Helper()
	res, err := f.Fetch(context.Background(), m)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !bytes.Equal(res.Data, want) {
		t.Fatalf("Fetch returned %d bytes that differ from the blob's %d", len(res.Data), len(want))
	}
	return res
}

func TestFetchSpreadsOverSources(t *testing.T) {
	data, m, chunks := testBlob(t, 1, 10*blob.ChunkSize+12345)
	ms := replicas(5, chunks)
	res := mustFetch(t, &Fetcher{Sources: sources(ms), Concurrency: 5}, m, data)
	var bytesTotal int64
	for _, s := range ms {
		st := res.Sources[s.id]
		if st.Chunks == 0 {
			t.Errorf("%s served no chunk: the fetch is not spread", s.id)
		}
		bytesTotal += st.Bytes
	}
	if bytesTotal != m.Size || totalCalls(ms) != int64(len(m.Chunks)) {
		t.Fatalf("%d bytes over %d calls for a blob of %d bytes, %d chunks", bytesTotal, totalCalls(ms), m.Size, len(m.Chunks))
	}
	if len(res.Misbehaving) != 0 || res.FromCache || res.Path != "" {
		t.Fatalf("result %+v", res)
	}
}

// TestLyingSourceAttributed: a source that alters chunks is caught on its
// first bad chunk, recorded with it, asked no more, and the blob comes
// whole from the others.
func TestLyingSourceAttributed(t *testing.T) {
	data, m, chunks := testBlob(t, 2, 12*blob.ChunkSize)
	ms := replicas(5, chunks)
	ms[2].lieOn = func(cid.Cid) bool { return true }
	res := mustFetch(t, &Fetcher{Sources: sources(ms), Concurrency: 4}, m, data)
	if len(res.Misbehaving) == 0 {
		t.Fatal("the lying source was not recorded")
	}
	for _, mb := range res.Misbehaving {
		if mb.Source != "node2" || !errors.Is(mb.Err, blob.ErrBadChunk) || chunks[mb.Chunk] == nil {
			t.Fatalf("misbehaviour %+v", mb)
		}
	}
	st := res.Sources["node2"]
	if st.Chunks != 0 || st.Bad != len(res.Misbehaving) || int64(st.Bad) != ms[2].calls.Load() {
		t.Fatalf("liar's stats %+v after %d calls", st, ms[2].calls.Load())
	}
	if st.Bad > 4 {
		t.Fatalf("the liar was asked %d times; only the requests in flight when it was caught may reach it", st.Bad)
	}
}

// TestLiarOnOneChunk: a source lying about a single chunk is caught on it
// and the chunk comes from another source.
func TestLiarOnOneChunk(t *testing.T) {
	data, m, chunks := testBlob(t, 3, 3*blob.ChunkSize)
	cids, _ := m.ChunkCIDs()
	ms := replicas(2, chunks)
	ms[0].lieOn = func(c cid.Cid) bool { return c == cids[1] }
	res := mustFetch(t, &Fetcher{Sources: sources(ms), Concurrency: 1}, m, data)
	if res.Sources["node1"].Chunks == 0 {
		t.Fatal("node1 served nothing")
	}
	if len(res.Misbehaving) > 1 || (len(res.Misbehaving) == 1 && res.Misbehaving[0].Chunk != cids[1]) {
		t.Fatalf("misbehaving %+v", res.Misbehaving)
	}
}

func TestDeadAndHangingSources(t *testing.T) {
	data, m, chunks := testBlob(t, 4, 8*blob.ChunkSize+1)
	ms := replicas(5, chunks)
	ms[0].dead = true
	ms[3].hang = true
	f := &Fetcher{Sources: sources(ms), Concurrency: 4, ChunkTimeout: 50 * time.Millisecond}
	res := mustFetch(t, f, m, data)
	if res.Sources["node0"].Failed == 0 || res.Sources["node3"].Failed == 0 {
		t.Fatalf("failures not recorded: %+v %+v", res.Sources["node0"], res.Sources["node3"])
	}
	if len(res.Misbehaving) != 0 {
		t.Fatalf("a dead source counted as lying: %+v", res.Misbehaving)
	}
	// A failed source is asked again only when no other is left: at most
	// once per worker before its failure is known.
	if c := ms[0].calls.Load() + ms[3].calls.Load(); c > 8 {
		t.Fatalf("dead and hanging sources asked %d times for %d chunks", c, len(m.Chunks))
	}
}

// TestNoGoodCopy: when every source lies, is dead or lacks a chunk, the
// fetch fails with an error naming the chunk and what each source did.
func TestNoGoodCopy(t *testing.T) {
	data, m, chunks := testBlob(t, 5, 4*blob.ChunkSize)
	_ = data
	cids, _ := m.ChunkCIDs()
	ms := replicas(3, chunks)
	ms[0].lieOn = func(c cid.Cid) bool { return c == cids[2] }
	ms[1].dead = true
	ms[2].missing = map[cid.Cid]bool{cids[2]: true}
	res, err := (&Fetcher{Sources: sources(ms), Concurrency: 1}).Fetch(context.Background(), m)
	var ce *ChunkError
	if !errors.As(err, &ce) || !errors.Is(err, ErrNoGoodCopy) {
		t.Fatalf("Fetch = %v, want a *ChunkError", err)
	}
	if ce.Chunk != cids[2] || ce.Index != 2 || ce.Blob != m.CID() || len(ce.Attempts) != 3 {
		t.Fatalf("ChunkError %+v", ce)
	}
	for _, want := range []string{cids[2].String(), "chunk 2", "node0", "node1", "node2", "connection refused", "not held"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if res == nil || len(res.Misbehaving) != 1 || res.Misbehaving[0].Source != "node0" {
		t.Fatalf("result with the error: %+v", res)
	}

	allBad := replicas(3, chunks)
	for _, s := range allBad {
		s.lieOn = func(cid.Cid) bool { return true }
	}
	_, err = (&Fetcher{Sources: sources(allBad)}).Fetch(context.Background(), m)
	if !errors.Is(err, ErrNoGoodCopy) {
		t.Fatalf("all sources lying: %v", err)
	}
	if _, err := (&Fetcher{}).Fetch(context.Background(), m); !errors.Is(err, ErrNoGoodCopy) || !strings.Contains(err.Error(), "no sources") {
		t.Fatalf("no sources: %v", err)
	}
}

func TestRepeatedChunkFetchedOnce(t *testing.T) {
	data := make([]byte, 5*blob.ChunkSize+7) // zeros: chunks 0..4 are one chunk
	m, chunks, err := blob.Split("lhc", blob.KindInput, data)
	if err != nil {
		t.Fatal(err)
	}
	ms := replicas(3, byCID(chunks))
	mustFetch(t, &Fetcher{Sources: sources(ms)}, m, data)
	if c := totalCalls(ms); c != 2 {
		t.Fatalf("%d requests for a blob of 2 distinct chunks", c)
	}
	empty, _, _ := blob.Split("lhc", blob.KindInput, nil)
	if res := mustFetch(t, &Fetcher{}, empty, []byte{}); len(res.Data) != 0 {
		t.Fatal("empty blob is not empty")
	}
}

// TestInconsistentManifest: chunk bytes that hash right but have another
// length than the manifest says are the manifest's fault, not the source's.
func TestInconsistentManifest(t *testing.T) {
	_, m, chunks := testBlob(t, 6, blob.ChunkSize+100)
	m.Size = blob.ChunkSize + 50
	ms := replicas(2, chunks)
	res, err := (&Fetcher{Sources: sources(ms)}).Fetch(context.Background(), m)
	if err == nil || !strings.Contains(err.Error(), "the manifest says 50") {
		t.Fatalf("Fetch = %v", err)
	}
	if len(res.Misbehaving) != 0 {
		t.Fatalf("an honest source blamed: %+v", res.Misbehaving)
	}
}

func TestCancelAndBadInput(t *testing.T) {
	_, m, chunks := testBlob(t, 7, 2*blob.ChunkSize)
	ms := replicas(2, chunks)
	for _, s := range ms {
		s.hang = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := (&Fetcher{Sources: sources(ms)}).Fetch(ctx, m)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNoGoodCopy) {
		t.Fatalf("Fetch past its deadline = %v", err)
	}
	dup := []Source{ms[0], ms[0]}
	if _, err := (&Fetcher{Sources: dup}).Fetch(context.Background(), m); err == nil {
		t.Fatal("two sources of one name accepted")
	}
	bad := *m
	bad.Kind = "exe"
	if _, err := (&Fetcher{Sources: sources(ms)}).Fetch(context.Background(), &bad); !errors.Is(err, blob.ErrMalformed) {
		t.Fatalf("Fetch of an invalid manifest = %v", err)
	}
}

func openCache(t *testing.T) *cache.Cache {
	t.Helper()
	c, err := cache.Open(t.TempDir(), 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSecondFetchFromCache: the second fetch of a blob makes no request,
// and the runner's path holds the blob.
func TestSecondFetchFromCache(t *testing.T) {
	data, m, chunks := testBlob(t, 8, 6*blob.ChunkSize+3)
	ms := replicas(5, chunks)
	f := &Fetcher{Sources: sources(ms), Cache: openCache(t)}
	first := mustFetch(t, f, m, data)
	if first.FromCache || first.Path == "" || first.CacheErr != nil {
		t.Fatalf("first fetch: %+v", first)
	}
	calls := totalCalls(ms)
	second := mustFetch(t, f, m, data)
	if got := totalCalls(ms) - calls; got != 0 || !second.FromCache || second.Path != first.Path {
		t.Fatalf("second fetch made %d requests (from cache %v)", got, second.FromCache)
	}
	onDisk, err := os.ReadFile(second.Path)
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("cached blob at %s: %v", second.Path, err)
	}
}

// TestResumeFromCachedChunks: chunks fetched before a failure are kept,
// so the next fetch asks only for the rest.
func TestResumeFromCachedChunks(t *testing.T) {
	data, m, chunks := testBlob(t, 9, 6*blob.ChunkSize)
	cids, _ := m.ChunkCIDs()
	c := openCache(t)
	broken := replicas(2, chunks)
	for _, s := range broken {
		s.missing = map[cid.Cid]bool{cids[5]: true}
	}
	if _, err := (&Fetcher{Sources: sources(broken), Cache: c, Concurrency: 1}).Fetch(context.Background(), m); !errors.Is(err, ErrNoGoodCopy) {
		t.Fatalf("Fetch with chunk 5 nowhere = %v", err)
	}
	ms := replicas(2, chunks)
	res := mustFetch(t, &Fetcher{Sources: sources(ms), Cache: c}, m, data)
	if got := totalCalls(ms); got != 1 || res.CachedChunks != 5 {
		t.Fatalf("resumed fetch made %d requests, %d chunks from the cache", got, res.CachedChunks)
	}
}

// TestCancelledBeforeStart: a context ended before the first chunk ends
// the fetch with its error, not with a blob of zeros.
func TestCancelledBeforeStart(t *testing.T) {
	_, m, chunks := testBlob(t, 10, 4*blob.ChunkSize)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ms := replicas(2, chunks)
	res, err := (&Fetcher{Sources: sources(ms)}).Fetch(ctx, m)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch with an ended context = %v (result %d bytes)", err, len(res.Data))
	}
	if totalCalls(ms) != 0 {
		t.Fatalf("%d requests after the context ended", totalCalls(ms))
	}
}
