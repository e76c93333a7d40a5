//go:build linux || darwin

package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCollectOutputsSafely: an output that is a symbolic link (here to a
// file outside the work directory) is not followed — the application
// cannot hand the volunteer's files to the project — and outputs past the
// output bound end with KilledOutput. Control: a regular file is read.
func TestCollectOutputsSafely(t *testing.T) {
	dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "secret")
	for path, b := range map[string]string{outside: "volunteer's secret", filepath.Join(dir, "ok"): "result"} {
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	r := &Runner{maxOutput: 1 << 20}
	out := Outcome{Output: []byte("stdout")}
	r.collectOutputs(&out, dir, Task{Outputs: []string{"link", "ok"}})
	if out.Files[0] != nil || string(out.Files[1]) != "result" || out.Killed != "" {
		t.Fatalf("files %q, killed %q: want the link left out and the regular file read", out.Files, out.Killed)
	}
	r.maxOutput = int64(len("stdout") + 3)
	out = Outcome{Output: []byte("stdout")}
	r.collectOutputs(&out, dir, Task{Outputs: []string{"ok"}})
	if out.Killed != KilledOutput || out.Files[0] != nil {
		t.Fatalf("over the bound: files %q, killed %q", out.Files, out.Killed)
	}
}
