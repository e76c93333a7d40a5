package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestOpensTablesWithoutFilters: a store written before Bloom filters
// were set (tables flushed with none) opens with them and reads every
// key, and a missing key is still not found; tables it writes then carry
// filters and read the same.
func TestOpensTablesWithoutFilters(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := db.Set([]byte(fmt.Sprintf("old/%04d", i)), []byte{byte(i)}, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := s.Put([]byte(fmt.Sprintf("new/%04d", i)), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"old", "new"} {
		for i := range 500 {
			v, err := s.Get([]byte(fmt.Sprintf("%s/%04d", prefix, i)))
			if err != nil || len(v) != 1 || v[0] != byte(i) {
				t.Fatalf("%s/%04d: %v %v", prefix, i, v, err)
			}
		}
		if _, err := s.Get([]byte(prefix + "/missing")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s/missing: %v, want ErrNotFound", prefix, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
