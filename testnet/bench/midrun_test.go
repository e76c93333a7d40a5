package bench

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestMidRunHeapProfiles: a heap profile is written each time another
// HeapProfileEvery jobs are harvested (at the first tick past each
// multiple), named by the jobs harvested then; a failure to open one is
// logged and ends the profiles, not the run.
func TestMidRunHeapProfiles(t *testing.T) {
	var at []int64
	var out bytes.Buffer
	r := &benchRun{o: Options{HeapProfileEvery: 10, HeapProfileAt: func(h int64) (io.WriteCloser, error) {
		at = append(at, h)
		return nopCloser{&out}, nil
	}}, logf: func(string, ...any) {}}
	for _, h := range []int64{0, 5, 10, 15, 19, 27, 29, 31, 55} {
		r.midRunHeapProfile(h)
	}
	if want := []int64{10, 27, 31, 55}; !slices.Equal(at, want) {
		t.Fatalf("profiles at %v harvested, want %v", at, want)
	}
	if out.Len() == 0 {
		t.Fatal("no profile written")
	}

	var logged int
	r = &benchRun{o: Options{HeapProfileEvery: 10, HeapProfileAt: func(int64) (io.WriteCloser, error) {
		return nil, errors.New("disk full")
	}}, logf: func(string, ...any) { logged++ }}
	r.midRunHeapProfile(10)
	r.midRunHeapProfile(20)
	if logged != 1 || r.o.HeapProfileEvery != 0 {
		t.Fatalf("a failed profile logged %d times, every %d after, want once and 0", logged, r.o.HeapProfileEvery)
	}
}
