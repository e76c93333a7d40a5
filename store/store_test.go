package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/testkit"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "store"))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustGet(t *testing.T, s *Store, key string, want string) {
	t.Helper()
	v, err := s.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(v) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, v, want)
	}
}

func mustMissing(t *testing.T, s *Store, key string) {
	t.Helper()
	if v, err := s.Get([]byte(key)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

func TestPutGetDelete(t *testing.T) {
	s := openTemp(t)
	mustMissing(t, s, "a")
	if err := s.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "a", "1")
	if err := s.Put([]byte("a"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "a", "2")
	// Empty values are values, not absence.
	if err := s.Put([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("empty")); err != nil || len(v) != 0 {
		t.Fatalf("Get(empty) = %q, %v", v, err)
	}
	if err := s.Delete([]byte("a")); err != nil {
		t.Fatal(err)
	}
	mustMissing(t, s, "a")
	// Deleting a missing key is not an error.
	if err := s.Delete([]byte("never")); err != nil {
		t.Fatalf("Delete(missing) = %v", err)
	}
}

func TestGetReturnsCopy(t *testing.T) {
	s := openTemp(t)
	val := []byte("value")
	if err := s.Put([]byte("k"), val); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X' // the caller's buffer is not the stored value
	v, err := s.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	v[0] = 'Y' // nor is the returned one
	mustGet(t, s, "k", "value")
}

func TestBatchAtomic(t *testing.T) {
	s := openTemp(t)
	if err := s.Put([]byte("gone"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	b.Put([]byte("b1"), []byte("1"))
	b.Put([]byte("b2"), []byte("2"))
	b.Delete([]byte("gone"))
	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3", b.Len())
	}
	// Nothing is visible before the commit.
	mustMissing(t, s, "b1")
	mustGet(t, s, "gone", "x")
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "b1", "1")
	mustGet(t, s, "b2", "2")
	mustMissing(t, s, "gone")

	// An abandoned batch writes nothing; a no-sync commit is visible.
	nb := s.NewBatch()
	nb.Put([]byte("b3"), []byte("3"))
	mustMissing(t, s, "b3")
	if err := nb.Commit(false); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "b3", "3")
}

func scan(t *testing.T, s *Store, prefix []byte) []string {
	t.Helper()
	var keys []string
	if err := s.Scan(prefix, func(k, v []byte) bool {
		keys = append(keys, fmt.Sprintf("%x=%s", k, v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestScanPrefixBounds(t *testing.T) {
	s := openTemp(t)
	keys := [][]byte{
		{0x00}, {0x01}, {0x01, 0x00}, {0x01, 0xff}, {0x01, 0xff, 0xff}, {0x02},
		{0x61, 0xff}, {0x61, 0xff, 0x00}, {0x61, 0xff, 0xff, 0x01}, {0x62},
		{0xff}, {0xff, 0x00}, {0xff, 0xff}, {0xff, 0xff, 0x05},
	}
	for i, k := range keys {
		if err := s.Put(k, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		prefix []byte
		want   []string
	}{
		{[]byte{0x01}, []string{"01=1", "0100=2", "01ff=3", "01ffff=4"}},
		{[]byte{0x01, 0xff}, []string{"01ff=3", "01ffff=4"}},
		{[]byte{0x61, 0xff}, []string{"61ff=6", "61ff00=7", "61ffff01=8"}},
		{[]byte{0x61, 0xff, 0xff}, []string{"61ffff01=8"}},
		{[]byte{0xff}, []string{"ff=10", "ff00=11", "ffff=12", "ffff05=13"}},
		{[]byte{0xff, 0xff}, []string{"ffff=12", "ffff05=13"}},
		{[]byte{0x03}, nil},
	}
	// The empty prefix scans everything.
	var all []string
	for i, k := range keys {
		all = append(all, fmt.Sprintf("%x=%d", k, i))
	}
	cases = append(cases, struct {
		prefix []byte
		want   []string
	}{nil, all})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%x", c.prefix), func(t *testing.T) {
			got := scan(t, s, c.prefix)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("Scan(%x) = %v, want %v", c.prefix, got, c.want)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte{0x01}, []byte{0x02}},
		{[]byte{0x01, 0xff}, []byte{0x02}},
		{[]byte{0x01, 0xfe}, []byte{0x01, 0xff}},
		{[]byte{0x61, 0xff, 0xff}, []byte{0x62}},
		{[]byte{0xff}, nil},
		{[]byte{0xff, 0xff}, nil},
		{nil, nil},
	} {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
	// The input is not modified.
	in := []byte{0x01, 0xff}
	prefixEnd(in)
	if !bytes.Equal(in, []byte{0x01, 0xff}) {
		t.Fatalf("prefixEnd modified its input: %x", in)
	}
}

func TestScanStopsEarlyAndOrders(t *testing.T) {
	s := openTemp(t)
	for _, k := range []string{"ns/c", "ns/a", "ns/b", "nt/a", "n"} {
		if err := s.Put([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	if err := s.Scan([]byte("ns/"), func(k, _ []byte) bool {
		seen = append(seen, string(k))
		return len(seen) < 2
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[ns/a ns/b]" {
		t.Fatalf("scan saw %v, want [ns/a ns/b]", seen)
	}
}

func TestKey(t *testing.T) {
	for _, c := range []struct {
		ns    string
		parts [][]byte
		want  string
	}{
		{"jobs", nil, "jobs/"},
		{"jobs", [][]byte{[]byte("1")}, "jobs/1"},
		{"peers", [][]byte{[]byte("a"), []byte("b"), {0x00, 0xff}}, "peers/a/b/\x00\xff"},
		{"x", [][]byte{{}, []byte("y")}, "x//y"},
	} {
		if got := string(Key(c.ns, c.parts...)); got != c.want {
			t.Errorf("Key(%q, %q) = %q, want %q", c.ns, c.parts, got, c.want)
		}
	}
	// Namespaces keep writers apart: a scan of one does not see another
	// whose name extends it.
	s := openTemp(t)
	_ = s.Put(Key("job", []byte("1")), []byte("a"))
	_ = s.Put(Key("jobs", []byte("1")), []byte("b"))
	if got := scan(t, s, Key("job")); len(got) != 1 || got[0] != fmt.Sprintf("%x=a", Key("job", []byte("1"))) {
		t.Fatalf("scan of job/ = %v", got)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := open(t, dir)
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	b.Put([]byte("b"), []byte("batched"))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("del"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete([]byte("del")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	mustGet(t, s, "k", "v")
	mustGet(t, s, "b", "batched")
	mustMissing(t, s, "del")
}

func TestOpenTwiceFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := open(t, dir)
	defer s.Close()
	// pebble locks its directory: a second open of a live store fails
	// instead of corrupting it.
	if s2, err := Open(dir); err == nil {
		s2.Close()
		t.Fatal("second Open of a locked store succeeded")
	}
}

// TestGroupSync: with a sync interval, writes wait for no fsync of their
// own; one group sync covers every write before it, none is done when
// nothing was written, Close syncs what is pending, and a reopened store
// has every write.
func TestGroupSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := OpenWith(dir, Options{SyncInterval: time.Hour}) // the loop never fires here
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := s.Put(fmt.Appendf(nil, "k%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.GroupSyncs(); n != 0 {
		t.Fatalf("%d group syncs before any was due", n)
	}
	for range 2 {
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.GroupSyncs(); n != 1 {
		t.Fatalf("%d group syncs after 100 writes and two Sync calls, want 1", n)
	}
	b := s.NewBatch()
	b.Put([]byte("b"), []byte("batched"))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete([]byte("k000")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.GroupSyncs(); n != 2 {
		t.Fatalf("%d group syncs after Close with writes pending, want 2", n)
	}
	s = open(t, dir)
	defer s.Close()
	mustMissing(t, s, "k000")
	mustGet(t, s, "k099", "v")
	mustGet(t, s, "b", "batched")
}

// TestGroupSyncLoop: the syncer runs by itself every interval while there
// are writes, and a synced-each store never counts group syncs.
func TestGroupSyncLoop(t *testing.T) {
	s, err := OpenWith(filepath.Join(t.TempDir(), "store"), Options{SyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a group sync at a 1 ms interval", func() bool { return s.GroupSyncs() > 0 })
	each := openTemp(t)
	if err := each.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := each.Sync(); err != nil || each.GroupSyncs() != 0 {
		t.Fatalf("synced-each store: Sync %v, %d group syncs", err, each.GroupSyncs())
	}
	if _, err := OpenWith(filepath.Join(t.TempDir(), "neg"), Options{SyncInterval: -time.Second}); err == nil {
		t.Fatal("a negative sync interval was taken")
	}
}

// TestClosedStoreErrs: operations after Close (a request handler that
// outlived its node's shutdown) return ErrClosed where pebble would
// panic, and operations racing Close either finish or get ErrClosed.
func TestClosedStoreErrs(t *testing.T) {
	s, err := OpenWith(t.TempDir(), Options{SyncInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if _, err := s.Get([]byte("a")); errors.Is(err, ErrClosed) {
				return
			} else if err != nil {
				t.Errorf("get while closing: %v", err)
				return
			}
		}
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close = %v, want ErrClosed", err)
	}
	if err := s.Put([]byte("b"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after close = %v", err)
	}
	if err := s.Scan(nil, func(_, _ []byte) bool { return true }); !errors.Is(err, ErrClosed) {
		t.Fatalf("scan after close = %v", err)
	}
	b := s.NewBatch()
	b.Put([]byte("c"), nil)
	if err := b.Commit(true); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close = %v", err)
	}
}
