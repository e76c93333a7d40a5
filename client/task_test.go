package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/runner"
)

// allowing is an Executor that only answers what it allows.
type allowing struct{ app, wasm string } // allowed app of "lhc"; project allowed modules

func (a allowing) Allowed(project, app string) bool { return project == "lhc" && app == a.app }
func (a allowing) AllowedWASM(project string) bool  { return project == a.wasm }
func (allowing) Run(context.Context, runner.Task) (runner.Outcome, error) {
	return runner.Outcome{}, errors.New("not run")
}

type noBlobs struct{}

func (noBlobs) Fetch(context.Context, string, []byte) (string, error) { return "", errors.New("none") }

// blobKey is a manifest CID's bytes (the spec checks only its form).
var blobKey = []byte{0x01, 0x71, 0x12, 0x20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

// TestTask: a job's runner task. A native application's carries the
// address-space limit with the runtime's room; a module's is a WASM task
// naming the module's key and verified file, with the machine's memory as
// its linear-memory limit; both get the job's wall and CPU limits.
func TestTask(t *testing.T) {
	c := &Client{cfg: Config{Attributes: Attributes{Memory: 1 << 30}, MaxCPU: time.Minute}}
	spec := &job.Spec{Project: "lhc", App: "mandelbrot", Args: []string{"a"}, TFinish: 3_600_000}
	in := map[string]string{"input0": "/cache/x"}
	native := c.task(spec, in, "")
	if native.WASM != nil || native.Memory != jobMemory(1<<30) || native.App != "mandelbrot" || native.Inputs["input0"] != "/cache/x" ||
		native.Wall != 54*time.Minute || native.CPU != time.Minute || native.Project != "lhc" || len(native.Args) != 1 {
		t.Errorf("native task %+v", native)
	}
	spec.Module = blobKey
	wasm := c.task(spec, in, "/blobs/m")
	if wasm.WASM == nil || string(wasm.WASM.Key) != string(blobKey) || wasm.WASM.Path != "/blobs/m" || wasm.Memory != 1<<30 ||
		wasm.App != "mandelbrot" || wasm.Wall != native.Wall || wasm.CPU != native.CPU || wasm.Inputs["input0"] != "/cache/x" {
		t.Errorf("module task %+v", wasm)
	}
}

// TestRefusal: which jobs a client does not run, from their specs: a
// module of a project not allowed modules (whatever its App), a native
// application not allowed, and a job naming blobs without Blobs.
func TestRefusal(t *testing.T) {
	native := &job.Spec{Project: "lhc", App: "hashchain"}
	module := &job.Spec{Project: "lhc", App: "hashchain", Module: blobKey}
	blobIn := &job.Spec{Project: "lhc", App: "hashchain", Inputs: []job.Input{{Blob: blobKey}}}
	for _, tc := range []struct {
		name  string
		exec  allowing
		blobs Blobs
		spec  *job.Spec
		want  error // nil: runs
	}{
		{"native allowed", allowing{app: "hashchain"}, nil, native, nil},
		{"native not allowed", allowing{app: "other", wasm: "lhc"}, noBlobs{}, native, ErrNotAllowed},
		{"module allowed", allowing{wasm: "lhc"}, noBlobs{}, module, nil},
		{"module, project not allowed modules", allowing{app: "hashchain", wasm: "cms"}, noBlobs{}, module, ErrNotAllowed},
		{"module without Blobs", allowing{wasm: "lhc"}, nil, module, ErrNoBlobs},
		{"blob input", allowing{app: "hashchain"}, noBlobs{}, blobIn, nil},
		{"blob input without Blobs", allowing{app: "hashchain"}, nil, blobIn, ErrNoBlobs},
	} {
		c := &Client{cfg: Config{Runner: tc.exec, Blobs: tc.blobs}}
		err := c.refusal("job", tc.spec)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && !isSkip(err) {
			t.Errorf("%s: %v does not skip the job", tc.name, err)
		}
	}
}
