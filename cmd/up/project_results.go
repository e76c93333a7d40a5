package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/project"
)

// unpackResult splits a result's output into the application's stdout
// and, when its job names output files (job.Spec.Outputs), those files by
// name; an output that does not unpack is an error naming the job.
func unpackResult(r project.Result) ([]byte, map[string][]byte, error) {
	if len(r.OutputNames) == 0 {
		return r.Output, nil, nil
	}
	o, err := job.UnpackOutputs(r.Output, r.OutputNames)
	if err != nil {
		return nil, nil, fmt.Errorf("result of job %s: %w", r.CID, err)
	}
	files := make(map[string][]byte, len(o.Files))
	for _, f := range o.Files {
		files[f.Name] = f.Data
	}
	return o.Stdout, files, nil
}

// writeResult writes a result's stdout to dir/base.out and its output
// files, if any, to dir/base.files/<name>.
func writeResult(dir, base string, stdout []byte, files map[string][]byte) error {
	if err := keystore.WriteFileAtomic(filepath.Join(dir, base+".out"), stdout, 0o644); err != nil {
		return err
	}
	if len(files) == 0 {
		return nil
	}
	fdir := filepath.Join(dir, base+".files")
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if job.ValidOutputName(name) != nil { // checked by UnpackOutputs against the spec: never here
			return fmt.Errorf("output file name %q", name)
		}
		if err := keystore.WriteFileAtomic(filepath.Join(fdir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
