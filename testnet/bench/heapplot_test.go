package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPlotHeap writes a PNG for a curve and refuses one of a single sample.
func TestPlotHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.png")
	r := &Report{Nodes: 16, R: 5, Jobs: 100, JobsPerSec: 50,
		HeapCurve: []HeapSample{{S: 2, Harvested: 10, LiveMiB: 40}, {S: 4, Harvested: 60, LiveMiB: 42}, {S: 6, Harvested: 100, LiveMiB: 41}}}
	if err := r.PlotHeap(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("not a PNG (%d bytes): %v", len(b), err)
	}
	r.HeapCurve = r.HeapCurve[:1]
	if err := r.PlotHeap(path); err == nil {
		t.Fatal("plotted a single sample")
	}
}
