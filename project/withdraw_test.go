package project_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/up-pool/up/apps/wasm"
	"github.com/up-pool/up/blob/cache"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/sandbox"
	"github.com/up-pool/up/testnet/testkit"
)

// wasmWorker is a client that runs project lhc's WebAssembly modules,
// fetching blobs through the overlay.
func (f *flow) wasmWorker(t *testing.T, name string) *client.Client {
	t.Helper()
	a, err := f.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r, err := runner.New(runner.Config{Launcher: testkit.Launcher(), Env: testkit.LauncherEnv(), WorkRoot: t.TempDir(), AllowWASM: []string{"lhc"},
		Sandbox: sandbox.Config{CacheDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	bc, err := cache.Open(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	store, err := blobclient.NewStore(a, bc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: r, Blobs: store, Slots: 1, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHarvestWithdrawsFinishedBlobs: once every unit naming a blob is
// valid, the harvest withdraws it from the overlay, and the nodes delete
// it past the skew margin. Control: while one unit naming the module and
// the shared input is still open, only the input no open unit names is
// withdrawn.
func TestHarvestWithdrawsFinishedBlobs(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the built-in module")
	}
	f := startFlow(t, 8, 91)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"builtin.wasm": wasm.Builtin, "a.bin": []byte("shared input"), "b.bin": []byte("second input")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Unit 1 names a.bin, unit 2 a.bin and b.bin.
	file := "app: digest\nmodule: builtin.wasm\nkeywords: [lhc]\nargs: [input0, input1]\ninputs: [{file: a.bin}, {file: \"{n}\"}]\nsweep:\n  n: [a.bin, b.bin]\n"
	src := filepath.Join(dir, "jobs.yaml")
	ctx := context.Background()
	rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), src, nil)
	if err != nil || rep.Submitted != 2 || rep.Blobs.Files != 3 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	if n, _ := f.ledger.LiveBlobs(); n != 3 {
		t.Fatalf("%d live blobs in the ledger, want 3", n)
	}
	c := f.wasmWorker(t, "alice")
	f.net.FlushAll(ctx)
	if ran, err := c.RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("first job: ran %v, %v", ran, err)
	}
	f.net.FlushAll(ctx)
	h, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || h.Decided != 1 {
		t.Fatalf("first harvest: %+v %v", h, err)
	}
	if h.Withdrawn != 0 {
		// Unit 1's a.bin and the module are still named by the open unit
		// 2; b.bin only by unit 2. Which unit ran first decides whether
		// b.bin is done: the control is that the shared ones are not.
		if n, _ := f.ledger.LiveBlobs(); n < 2 {
			t.Fatalf("the first harvest withdrew %d blobs, leaving %d live: the open unit's module and shared input went too", h.Withdrawn, n)
		}
	}
	if ran, err := c.RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("second job: ran %v, %v", ran, err)
	}
	f.net.FlushAll(ctx)
	h2, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || h2.Decided != 1 || h.Withdrawn+h2.Withdrawn != 3 || len(h2.Errors) != 0 {
		t.Fatalf("second harvest: %+v %v; %d withdrawn before", h2, err, h.Withdrawn)
	}
	if n, _ := f.ledger.LiveBlobs(); n != 0 {
		t.Fatalf("%d blobs still live after every unit is valid", n)
	}
	f.clock.Advance(time.Duration(job.ExpiryMarginMS)*time.Millisecond + time.Second)
	for _, nd := range f.net.Live() {
		nd.Blobs().ExpireNow(nil)
		if nd.Blobs().Len() != 0 {
			t.Errorf("node %s still holds %d blobs past the withdrawal's margin", nd.ID(), nd.Blobs().Len())
		}
	}
}

// TestJobStdinAndOutputFiles: a job file's stdin and outputs reach the
// volunteer's sandbox through a version 4 spec, and the harvested result
// unpacks to the module's standard output and the files it wrote (a
// named file it did not write left out). Control: the spec of a job
// without them stays version 3.
func TestJobStdinAndOutputFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the built-in module")
	}
	f := startFlow(t, 8, 93)
	dir := t.TempDir()
	in := []byte("to be copied\n")
	for name, data := range map[string][]byte{"builtin.wasm": wasm.Builtin, "in.txt": in} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := "app: tee\nmodule: builtin.wasm\nkeywords: [lhc]\nargs: [copy.txt]\ninputs: [{file: in.txt}]\nstdin: 0\noutputs: [copy.txt, none.txt]\n"
	ctx := context.Background()
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), filepath.Join(dir, "jobs.yaml"), nil); err != nil || rep.Submitted != 1 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	c := f.wasmWorker(t, "alice")
	f.net.FlushAll(ctx)
	if ran, err := c.RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("ran %v, %v", ran, err)
	}
	f.net.FlushAll(ctx)
	if h, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || h.Recorded != 1 {
		t.Fatalf("harvest: %+v %v", h, err)
	}
	var res project.Result
	if err := f.ledger.EachResult(func(r project.Result, _ int, _ string) error { res = r; return nil }); err != nil {
		t.Fatal(err)
	}
	o, err := job.UnpackOutputs(res.Output, res.OutputNames)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("result exit %d %q: %v", res.ExitCode, res.Error, err)
	}
	if !bytes.Equal(o.Stdout, in) || len(o.Files) != 1 || o.Files[0].Name != "copy.txt" || !bytes.Equal(o.Files[0].Data, in) {
		t.Fatalf("unpacked stdout %q, files %+v", o.Stdout, o.Files)
	}
	plain, err := f.proj.SpecFor(project.Unit{App: "noop", Keywords: []string{"lhc"}, TFinish: time.Minute})
	if err != nil || plain.Version != job.WriteVersion {
		t.Fatalf("control: a spec without standard input or outputs is version %d (%v), want %d", plain.Version, err, job.WriteVersion)
	}
}
