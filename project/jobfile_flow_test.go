package project_test

import (
	"context"
	"testing"
)

// TestJobFileGetsProjectKeyword: a job file whose keywords leave out the
// project's name (the README's `keywords: [fractal]` for project lhc), or
// that has no keywords at all, still makes jobs the project's clients
// find: the project's keyword is added to every job.
func TestJobFileGetsProjectKeyword(t *testing.T) {
	f := startFlow(t, 6, 74)
	for _, file := range []string{
		"app: hashchain\nargs: [\"100\", \"a\"]\nkeywords: [fractal]\n",
		"app: hashchain\nargs: [\"100\", \"b\"]\n",
	} {
		rep, err := f.proj.SubmitFile(context.Background(), f.ledger, []byte(file), "jobs.yaml", nil)
		if err != nil || rep.Submitted != 1 {
			t.Fatalf("submit %q: %+v, %v", file, rep, err)
		}
	}
	if n := f.work(t, f.worker(t, "w1")); n != 2 {
		t.Fatalf("a client of lhc ran %d jobs, want 2", n)
	}
}
