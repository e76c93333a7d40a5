package project_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/job"
)

// writeLocalFiles writes three input files of 1–2 MiB and a small module
// into dir and returns their contents by name.
func writeLocalFiles(t *testing.T, dir string, seed uint64) map[string][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	files := map[string][]byte{"mod.wasm": []byte("\x00asm\x01\x00\x00\x00 any bytes will do")}
	for i, size := range []int{1 << 20, 3 << 19, 2 << 20} {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		files[fmt.Sprintf("data/in%d.bin", i)] = data
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// blobJobFile is 10 WASM jobs each naming the same three local inputs
// (one by an absolute path) and the module.
func blobJobFile(dir string) string {
	return fmt.Sprintf(`
app: mandel
module: mod.wasm
args: ["{i}"]
keywords: [lhc]
inputs: [{file: data/in0.bin}, {file: ./data/in1.bin}, {file: %s}]
sweep:
  i: {from: 1, to: 10}
`, filepath.Join(dir, "data/in2.bin"))
}

// TestSubmitLocalFiles: a job file naming local inputs and a module
// uploads each distinct file once, through its closest node: every blob
// is held whole by its r closest nodes, the project's upstream is about
// the distinct data once (not r times), and every job names the blobs.
func TestSubmitLocalFiles(t *testing.T) {
	f := startFlow(t, 8, 83)
	dir := t.TempDir()
	files := writeLocalFiles(t, dir, 83)
	src := filepath.Join(dir, "jobs.yaml")
	rep, err := f.proj.SubmitFile(context.Background(), f.ledger, []byte(blobJobFile(dir)), src, nil)
	if err != nil || rep.Submitted != 10 || len(rep.Errors) != 0 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	var distinct int64
	keys := map[string][]byte{}
	for name, data := range files {
		kind := blob.KindInput
		if name == "mod.wasm" {
			kind = blob.KindWasm
		}
		m, _, err := blob.Split(f.proj.Name(), kind, data)
		if err != nil {
			t.Fatal(err)
		}
		keys[name], distinct = m.Key(), distinct+int64(len(data))
	}
	b := rep.Blobs
	t.Logf("blobs: %d files, %d bytes, uploaded %d (inputs × r = %d)", b.Files, b.Bytes, b.Uploaded, b.Bytes*int64(b.Replication))
	if b.Files != 4 || b.Bytes != distinct || b.Replication < 2 {
		t.Fatalf("blob report %+v, want 4 files of %d bytes", b, distinct)
	}
	// Each file once: a second upload of any would add a whole copy.
	if b.Uploaded < distinct || float64(b.Uploaded) > 1.1*float64(distinct) {
		t.Fatalf("uploaded %d chunk bytes for %d distinct: want about 1×, not %d×", b.Uploaded, distinct, b.Replication)
	}
	for name, key := range keys {
		want := f.net.TrueClosest(key, b.Replication)
		var got []peer.ID
		for _, nd := range f.net.Live() {
			if _, complete := nd.Blobs().Holds(key); complete {
				got = append(got, nd.ID())
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s held whole by %v, want its %d closest %v", name, got, b.Replication, want)
		}
	}
	checkJobsNameBlobs(t, f, keys)
}

// checkJobsNameBlobs checks that every job of the ledger names the module
// and the three inputs' blobs, in the file's order.
func checkJobsNameBlobs(t *testing.T, f *flow, keys map[string][]byte) {
	t.Helper()
	rows, err := f.ledger.DB().Query(`SELECT signed FROM specs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		_, spec, err := job.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !bytes.Equal(spec.Module, keys["mod.wasm"]) || spec.App != "mandel" || len(spec.Inputs) != 3 {
			t.Fatalf("job: module %x app %q %d inputs", spec.Module, spec.App, len(spec.Inputs))
		}
		for i, in := range spec.Inputs {
			name := fmt.Sprintf("data/in%d.bin", i)
			if !bytes.Equal(in.Blob, keys[name]) || in.URL != "" || in.Size <= 0 {
				t.Fatalf("job input %d: %+v, want the blob of %s", i, in, name)
			}
		}
	}
	if n != 10 {
		t.Fatalf("%d jobs in the ledger, want 10", n)
	}
}
