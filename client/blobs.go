package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/runner"
)

// Blobs gets the blobs a job names, its WebAssembly module and its blob
// inputs (job.Spec.Module, job.Input.Blob), from the overlay: the
// network's blob fetcher (package blobnet), or a fake in tests.
type Blobs interface {
	// Fetch returns the path of a file holding the bytes of the blob whose
	// manifest CID is key, a blob of project (the job's, whose signed
	// statement admits it): verified against the manifest's chunk CIDs,
	// and cached by key, so the file stays as it is while the client uses
	// it and a blob is fetched once for the jobs that share it. It refuses
	// a manifest of another project.
	Fetch(ctx context.Context, project string, key []byte) (path string, err error)
}

// ErrNoBlobs reports a job that names blobs (a module, a blob input)
// while the client has no Blobs to get them: skipped before its claim,
// as a job whose application is not allowed.
var ErrNoBlobs = errors.New("job needs blobs and the client has no blob fetcher")

// refusal says why this client does not run a job, from its spec alone:
// nil if it may. A job with a WebAssembly module needs its project allowed
// modules (the runner's AllowWASM); another, its application allowed for
// the project; either, when it names blobs, a Blobs to get them.
func (c *Client) refusal(cid string, spec *job.Spec) error {
	switch {
	case len(spec.Module) > 0 && !c.cfg.Runner.AllowedWASM(spec.Project):
		return fmt.Errorf("job %s: %w: WebAssembly module %q of project %q (modules of the project not allowed)",
			cid, ErrNotAllowed, spec.App, spec.Project)
	case len(spec.Module) == 0 && !c.cfg.Runner.Allowed(spec.Project, spec.App):
		return fmt.Errorf("job %s: %w: %q of project %q", cid, ErrNotAllowed, spec.App, spec.Project)
	case spec.UsesBlobs() && c.cfg.Blobs == nil:
		return fmt.Errorf("job %s: %w", cid, ErrNoBlobs)
	}
	return nil
}

// fetchModule gets the job's WebAssembly module through Blobs: the path
// of its verified file, "" for a job without one.
func (c *Client) fetchModule(ctx context.Context, spec *job.Spec) (string, error) {
	if len(spec.Module) == 0 {
		return "", nil
	}
	if c.cfg.Blobs == nil {
		return "", ErrNoBlobs
	}
	path, err := c.cfg.Blobs.Fetch(ctx, spec.Project, spec.Module)
	if err != nil {
		return "", fmt.Errorf("module %s: %w", blobName(spec.Module), err)
	}
	return path, nil
}

// fetchBlobInput gets input i, a blob, through Blobs.
func (c *Client) fetchBlobInput(ctx context.Context, spec *job.Spec, i int) (string, error) {
	in := spec.Inputs[i]
	if c.cfg.Blobs == nil {
		return "", fmt.Errorf("input %d (blob %s): %w", i, blobName(in.Blob), ErrNoBlobs)
	}
	path, err := c.cfg.Blobs.Fetch(ctx, spec.Project, in.Blob)
	if err != nil {
		return "", fmt.Errorf("input %d (blob %s): %w", i, blobName(in.Blob), err)
	}
	return path, nil
}

// task is the runner task of a job: its application or its module (at
// modulePath), arguments and inputs (fetched), under the client's limits.
// A module's memory limit is the machine's memory (its linear memory
// holds all it uses; the runner caps it at 4 GiB), a process's that plus
// the Go runtime's reservations (jobMemory).
func (c *Client) task(spec *job.Spec, inputs map[string]string, modulePath string) runner.Task {
	wall, cpu := limits(spec.TFinish, c.cfg.MaxCPU)
	t := runner.Task{
		Project: spec.Project, App: spec.App, Args: spec.Args, Inputs: inputs,
		Wall: wall, CPU: cpu, Memory: jobMemory(c.cfg.Attributes.Memory),
	}
	if len(spec.Module) > 0 {
		t.WASM = &runner.Module{Key: spec.Module, Path: modulePath}
		t.Memory = max(c.cfg.Attributes.Memory, 0)
	}
	if spec.Stdin > 0 {
		t.Stdin = fmt.Sprintf("input%d", spec.Stdin-1)
	}
	t.Outputs = spec.Outputs
	return t
}

// resultOutput is what a job's result carries as its output: stdout, or
// with output files named by the spec, stdout and those files packed
// (job.PackOutputs).
func resultOutput(spec *job.Spec, out runner.Outcome) []byte {
	if len(spec.Outputs) == 0 {
		return out.Output
	}
	return job.PackOutputs(out.Output, spec.Outputs, out.Files)
}

// blobName is a blob key as logs show it: its CID, or hex.
func blobName(key []byte) string {
	if c, err := job.ParseBlobKey(key); err == nil {
		return c.String()
	}
	return fmt.Sprintf("%x", key)
}
