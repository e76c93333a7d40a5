package claim

import (
	"fmt"
	"testing"

	"github.com/up-pool/up/job"
)

// TestReleaseNotes: a server counts every release of a held job, keeps
// the latest MaxNotes, and drops them with the job; another job's notes
// are its own.
func TestReleaseNotes(t *testing.T) {
	srv := NewServer[string](srvTClaim, DefaultTSkew)
	for i := range MaxNotes + 3 {
		srv.NoteRelease("a", []byte(fmt.Sprintf("client-%d", i)), uint8(i%7), int64(1000+i))
	}
	srv.NoteRelease("b", []byte("other"), 2, 5)
	n, notes := srv.Releases("a")
	if n != MaxNotes+3 || len(notes) != MaxNotes {
		t.Fatalf("%d releases, %d notes; want %d and %d", n, len(notes), MaxNotes+3, MaxNotes)
	}
	if first, last := notes[0], notes[len(notes)-1]; string(first.Client) != "client-3" || last.At != int64(1000+MaxNotes+2) {
		t.Fatalf("kept notes from %q to %d ms, want the latest: client-3 .. %d ms", first.Client, last.At, 1000+MaxNotes+2)
	}
	srv.Changed("a", job.State{}, true, 2000)
	if n, notes := srv.Releases("a"); n != 0 || notes != nil {
		t.Fatalf("deleted job keeps %d releases, %d notes", n, len(notes))
	}
	if n, _ := srv.Releases("b"); n != 1 {
		t.Fatalf("other job has %d releases, want 1", n)
	}
}
