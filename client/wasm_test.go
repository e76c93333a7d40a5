package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
)

// fakeBlobs is a client.Blobs holding blobs in memory, by key: it writes
// each to a file on its first fetch and records the fetches.
type fakeBlobs struct {
	dir   string
	blobs map[string][]byte

	mu      sync.Mutex
	fetches []string // "project key-hex"
}

func newFakeBlobs(t *testing.T) *fakeBlobs {
	return &fakeBlobs{dir: t.TempDir(), blobs: map[string][]byte{}}
}

// add holds data under a made-up manifest key and returns the key.
func (f *fakeBlobs) add(data []byte) []byte {
	sum := sha256.Sum256(append([]byte("manifest of "), data...))
	mh, err := multihash.Encode(sum[:], multihash.SHA2_256)
	if err != nil {
		panic(err)
	}
	key := cid.NewCidV1(cid.DagCBOR, mh).Bytes()
	f.blobs[string(key)] = data
	return key
}

func (f *fakeBlobs) Fetch(_ context.Context, project string, key []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches = append(f.fetches, fmt.Sprintf("%s %x", project, key))
	data, ok := f.blobs[string(key)]
	if !ok {
		return "", errors.New("no such blob")
	}
	path := filepath.Join(f.dir, fmt.Sprintf("%x", key))
	if _, err := os.Stat(path); err != nil {
		if err := os.WriteFile(path, data, 0o444); err != nil {
			return "", err
		}
	}
	return path, nil
}

// submitSpec signs and submits a spec the project made (edit changes it
// first) and returns the job's key.
func (cn *caseNet) submitSpec(t *testing.T, app string, args []string, edit func(*job.Spec)) []byte {
	t.Helper()
	spec, err := cn.proj.NewSpec(app, args, []string{"lhc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	edit(spec)
	prep, err := cn.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r := cn.proj.Submit(context.Background(), []*project.Prepared{prep}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	cn.net.FlushAll(context.Background())
	return prep.Key()
}

// wasmRunner is a runner allowing project lhc's modules (and no native
// application), closed at the end of the test.
func wasmRunner(t *testing.T, allowWASM ...string) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{Launcher: testkit.Launcher(), WorkRoot: t.TempDir(), Env: testkit.LauncherEnv(), AllowWASM: allowWASM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestWASMJob runs a version 3 job end to end: its module (the
// WebAssembly build of mandelbrot) and an input are blobs, fetched through
// Blobs; the runner runs the module in the sandbox, and the result the
// project opens is the native built-in's output for the same arguments.
func TestWASMJob(t *testing.T) {
	cn := startCaseNet(t, 67)
	blobs := newFakeBlobs(t)
	module := blobs.add(testkit.WasmModule(t, "github.com/up-pool/up/apps/wasm/mandelbrot"))
	input := blobs.add([]byte("an input the module does not read"))
	args := []string{"-2", "-1.5", "1", "1.5", "96", "72", "300"}
	key := cn.submitSpec(t, "mandelbrot", args, func(s *job.Spec) {
		s.Module = module
		s.Inputs = []job.Input{{Blob: input}}
	})
	_, c := cn.worker(t, "wasm", nil, func(cfg *client.Config) {
		cfg.Runner = wasmRunner(t, "lhc")
		cfg.Blobs = blobs
	})
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	if st := cn.state(key); st.Phase != job.Finished {
		t.Fatalf("job is %s", st.Phase)
	}
	var native bytes.Buffer
	app, _ := apps.Lookup("mandelbrot")
	if err := app.Main(args, &native, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	res := cn.open(t, key)
	if res.ExitCode != 0 || res.Error != "" || !bytes.Equal(res.Output, native.Bytes()) {
		t.Fatalf("result: exit %d, error %q, %d bytes; native %d bytes", res.ExitCode, res.Error, len(res.Output), native.Len())
	}
	want := []string{fmt.Sprintf("lhc %x", input), fmt.Sprintf("lhc %x", module)}
	if fmt.Sprint(blobs.fetches) != fmt.Sprint(want) {
		t.Errorf("fetches %q, want %q", blobs.fetches, want)
	}
}

// TestWASMJobSkipped: a version 3 job is skipped before any claim, and
// stays ready for others, by a client whose volunteer did not allow the
// project's modules (though it allows the native application of that
// name), and by one without Blobs; a client allowing it runs it (the
// control).
func TestWASMJobSkipped(t *testing.T) {
	cn := startCaseNet(t, 68)
	blobs := newFakeBlobs(t)
	module := blobs.add(testkit.WasmModule(t, "github.com/up-pool/up/apps/wasm/hashchain"))
	key := cn.submitSpec(t, "hashchain", []string{"10", "x"}, func(s *job.Spec) { s.Module = module })
	for name, opt := range map[string]func(*client.Config){
		"modules not allowed": func(cfg *client.Config) { cfg.Blobs = blobs }, // the native hashchain is
		"no blobs":            func(cfg *client.Config) { cfg.Runner = wasmRunner(t, "lhc") },
	} {
		_, c := cn.worker(t, name, []string{"hashchain"}, opt)
		ran, err := c.RunOne(context.Background(), "lhc")
		if ran || !errors.Is(err, indexclient.ErrNoJob) {
			t.Fatalf("%s: ran %v, err %v; want the job skipped", name, ran, err)
		}
		if st := cn.state(key); st.Phase != job.Ready {
			t.Fatalf("%s: job left %s", name, st.Phase)
		}
	}
	if len(blobs.fetches) != 0 {
		t.Fatalf("a skipped job's blobs were fetched: %q", blobs.fetches)
	}
	_, c := cn.worker(t, "allowed", nil, func(cfg *client.Config) {
		cfg.Runner = wasmRunner(t, "lhc")
		cfg.Blobs = blobs
	})
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("control: ran %v, err %v", ran, err)
	}
	if res := cn.open(t, key); res.ExitCode != 0 || len(res.Output) != 65 {
		t.Fatalf("control: result exit %d, output %q", res.ExitCode, res.Output)
	}
}
