package cache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
)

func open(t *testing.T, dir string, max int64) *Cache {
	t.Helper()
	c, err := Open(dir, max)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

// chunk is a small chunk and its CID.
func chunk(i int) (cid.Cid, []byte) {
	data := []byte(fmt.Sprintf("chunk %04d", i)) // 10 bytes
	return blob.ChunkCID(data), data
}

func mustPut(t *testing.T, c *Cache, i int) cid.Cid {
	t.Helper()
	id, data := chunk(i)
	if err := c.Put(id, data); err != nil {
		t.Fatalf("Put chunk %d: %v", i, err)
	}
	return id
}

func TestPutGet(t *testing.T) {
	c := open(t, t.TempDir(), 1<<20)
	id, data := chunk(1)
	if c.Has(id) {
		t.Fatal("empty cache has a chunk")
	}
	if _, err := c.Get(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get from an empty cache = %v, want ErrNotFound", err)
	}
	mustPut(t, c, 1)
	mustPut(t, c, 1) // again: only marked used
	got, err := c.Get(id)
	if err != nil || !bytes.Equal(got, data) || !c.Has(id) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes != int64(len(data)) {
		t.Fatalf("Stats = %+v", s)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), id.String())); err != nil {
		t.Fatalf("chunk file not named by its CID: %v", err)
	}
	other, _ := chunk(2)
	if err := c.Put(other, data); !errors.Is(err, blob.ErrBadChunk) {
		t.Fatalf("Put of bytes that do not hash to the CID = %v, want blob.ErrBadChunk", err)
	}
	if c.Has(other) {
		t.Fatal("the refused chunk is cached")
	}
	m, _, _ := blob.Split("p", blob.KindInput, data)
	if _, err := c.Get(m.CID()); !errors.Is(err, blob.ErrMalformed) {
		t.Fatalf("Get of a manifest CID = %v, want blob.ErrMalformed", err)
	}
}

// TestCorruptChunkDeleted alters a cached file behind the cache's back:
// the next read fails, reports it, and deletes the entry.
func TestCorruptChunkDeleted(t *testing.T) {
	c := open(t, t.TempDir(), 1<<20)
	id := mustPut(t, c, 1)
	path := filepath.Join(c.Dir(), id.String())
	if err := os.WriteFile(path, []byte("chunk 0666"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(id); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of an altered file = %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the altered file is still there: %v", err)
	}
	grown := mustPut(t, c, 3)
	if err := os.WriteFile(filepath.Join(c.Dir(), grown.String()), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(grown); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a grown file = %v, want ErrCorrupt", err)
	}
	if s := c.Stats(); s.Corrupt != 2 || s.Entries != 0 || s.Bytes != 0 {
		t.Fatalf("Stats = %+v", s)
	}
	if _, err := c.Get(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after the deletion = %v, want ErrNotFound", err)
	}
	id2 := mustPut(t, c, 2)
	if err := os.Remove(filepath.Join(c.Dir(), id2.String())); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(id2); !errors.Is(err, ErrNotFound) || c.Has(id2) {
		t.Fatalf("Get of a file deleted behind the cache's back = %v", err)
	}
}

func TestBlob(t *testing.T) {
	c := open(t, t.TempDir(), 16<<20)
	data := bytes.Repeat([]byte("0123456789abcdef"), (blob.ChunkSize+100)/16)
	m, chunks, err := blob.Split("p", blob.KindWasm, data)
	if err != nil {
		t.Fatal(err)
	}
	cids, _ := m.ChunkCIDs()
	for i, id := range cids {
		if err := c.Put(id, chunks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.BlobPath(m); !errors.Is(err, ErrNotFound) {
		t.Fatalf("BlobPath before PutBlob = %v, want ErrNotFound", err)
	}
	if _, err := c.PutBlob(m, data[1:]); !errors.Is(err, blob.ErrBadChunk) {
		t.Fatalf("PutBlob of the wrong bytes = %v, want blob.ErrBadChunk", err)
	}
	path, err := c.PutBlob(m, data)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != m.CID().String()+".blob" {
		t.Fatalf("blob file %s not named by the manifest CID", path)
	}
	onDisk, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("blob file: %v", err)
	}
	for _, id := range cids {
		if c.Has(id) {
			t.Fatalf("chunk %s still cached beside the assembled blob", id)
		}
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes != int64(len(data)) {
		t.Fatalf("Stats = %+v", s)
	}
	got, err := c.BlobPath(m)
	if err != nil || got != path {
		t.Fatalf("BlobPath = %s, %v", got, err)
	}
	onDisk[len(onDisk)/2] ^= 1
	if err := os.WriteFile(path, onDisk, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Blob(m); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Blob of an altered file = %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) || c.Stats().Corrupt != 1 {
		t.Fatalf("altered blob not deleted: %v, %+v", err, c.Stats())
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := open(t, t.TempDir(), 30) // three 10-byte chunks
	ids := []cid.Cid{mustPut(t, c, 0), mustPut(t, c, 1), mustPut(t, c, 2)}
	if _, err := c.Get(ids[0]); err != nil { // 0 is now the most recent
		t.Fatal(err)
	}
	mustPut(t, c, 3)
	if c.Has(ids[1]) || !c.Has(ids[0]) || !c.Has(ids[2]) {
		t.Fatal("the least recently used chunk (1) was not the one evicted")
	}
	if s := c.Stats(); s.Entries != 3 || s.Bytes != 30 || s.Evicted != 1 {
		t.Fatalf("Stats = %+v", s)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), ids[1].String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("evicted file still on disk: %v", err)
	}
	big := make([]byte, 31)
	if _, _, err := blob.Split("p", blob.KindInput, big); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(blob.ChunkCID(big), big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put of more than the bound = %v, want ErrTooLarge", err)
	}
}

// TestOpenRecovers reopens a cache a crash interrupted: the half-written
// temporary file is removed, the entries are kept with their sizes, the
// oldest evicted down to a smaller bound, and foreign files left alone.
func TestOpenRecovers(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 1<<20)
	ids := []cid.Cid{mustPut(t, c, 0), mustPut(t, c, 1), mustPut(t, c, 2)}
	old := time.Now().Add(-time.Hour)
	for i, id := range ids { // 0 oldest, 2 newest
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, id.String()), at, at); err != nil {
			t.Fatal(err)
		}
	}
	torn := filepath.Join(dir, tempPrefix+"123")
	foreign := filepath.Join(dir, "README")
	for _, f := range []string{torn, foreign} {
		if err := os.WriteFile(f, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c = open(t, dir, 20)
	if _, err := os.Stat(torn); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("interrupted write survived Open: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("foreign file removed: %v", err)
	}
	if c.Has(ids[0]) || !c.Has(ids[1]) || !c.Has(ids[2]) {
		t.Fatal("Open did not evict the oldest entry down to the bound")
	}
	if s := c.Stats(); s.Entries != 2 || s.Bytes != 20 {
		t.Fatalf("Stats after Open = %+v", s)
	}
	if _, err := Open(dir, 0); err == nil {
		t.Fatal("Open with a bound of 0 succeeded")
	}
}

// TestConcurrent runs puts, gets and evictions at once (run with -race):
// every Get returns the right bytes or ErrNotFound.
func TestConcurrent(t *testing.T) {
	c := open(t, t.TempDir(), 200) // 20 of the 40 chunks
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				i := (g*7 + k) % 40
				id, data := chunk(i)
				if err := c.Put(id, data); err != nil {
					errs <- err
					return
				}
				got, err := c.Get(id)
				if err != nil && !errors.Is(err, ErrNotFound) || err == nil && !bytes.Equal(got, data) {
					errs <- fmt.Errorf("Get chunk %d = %q, %v", i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Bytes > 200 || s.Corrupt != 0 {
		t.Fatalf("Stats = %+v", s)
	}
	des, _ := os.ReadDir(c.Dir())
	if len(des) != c.Stats().Entries {
		t.Fatalf("%d files on disk, %d entries", len(des), c.Stats().Entries)
	}
}

// TestInvalidManifestKeepsEntry: asking with an invalid manifest is the
// caller's error; it does not count as, or delete, a corrupt entry.
func TestInvalidManifestKeepsEntry(t *testing.T) {
	c := open(t, t.TempDir(), 1<<20)
	m, _, err := blob.Split("p", blob.KindInput, []byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBlob(m, []byte("data")); err != nil {
		t.Fatal(err)
	}
	bad := *m
	bad.ChunkSize = 1
	if _, _, err := c.Blob(&bad); !errors.Is(err, blob.ErrMalformed) {
		t.Fatalf("Blob with an invalid manifest = %v, want blob.ErrMalformed", err)
	}
	if _, err := c.BlobPath(m); err != nil || c.Stats().Corrupt != 0 {
		t.Fatalf("entry lost: %v, %+v", err, c.Stats())
	}
}
