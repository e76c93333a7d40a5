package project_test

import (
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
)

// TestSpecLifetime: a project's specs carry a lifetime under its
// signature: DefaultLifetime from NewSpec, the job file's through SpecFor.
func TestSpecLifetime(t *testing.T) {
	f := startFlow(t, 2, 41)
	spec, err := f.proj.NewSpec("hashchain", nil, []string{"lhc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(spec.Lifetime) * time.Millisecond; got != project.DefaultLifetime {
		t.Fatalf("NewSpec lifetime %s, want %s", got, project.DefaultLifetime)
	}
	units, _, err := project.ParseJobFile([]byte("app: hashchain\nlifetime: 2d\n"), "lhc")
	if err != nil {
		t.Fatal(err)
	}
	spec, err = f.proj.SpecFor(units[0])
	if err != nil {
		t.Fatal(err)
	}
	prep, err := f.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := job.Decode(prep.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if want := got.Created + (48 * time.Hour).Milliseconds(); got.Expires() != want || got.Version != job.WriteVersion {
		t.Fatalf("signed spec version %d expires %d, want version %d expiring at %d", got.Version, got.Expires(), job.WriteVersion, want)
	}
}
