package demo_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/apps/wasm"
	"github.com/up-pool/up/testnet/demo"
	"github.com/up-pool/up/testnet/testkit"
)

// TestDemo: the embedded default runs end to end: every tile validated,
// credit only for valid results, the assembled image decodes.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{
		Dir: dir, Tiles: 4, Launcher: testkit.Launcher(), LauncherEnv: testkit.LauncherEnv(), Log: &log,
		// Four volunteers each compile the 3.6 MB module: under the race
		// detector on a loaded two-core machine that alone took over 90 s.
		Timeout: 4 * time.Minute,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("%+v", rep)
	valid := 0
	for _, c := range rep.Credit {
		valid += c.Valid
		if c.Invalid != 0 {
			t.Fatalf("honest volunteer %s has invalid results", c.Client)
		}
	}
	if valid < rep.Jobs {
		t.Fatalf("%d valid results for %d jobs", valid, rep.Jobs)
	}
	// Each volunteer's credit, gathered from the overlay and verified,
	// is what the ledger granted it.
	ledger := map[string]int{}
	for _, c := range rep.Credit {
		ledger[c.Client] = c.Valid
	}
	for _, v := range rep.Receipts {
		if int(v.Total) != ledger[v.Client] || v.Rejected != 0 || v.Nodes == 0 {
			t.Errorf("volunteer %s: credit %d from %d nodes (%d rejected), ledger says %d", v.Client, v.Total, v.Nodes, v.Rejected, ledger[v.Client])
		}
	}
	// The module went into the overlay once, not once per replica.
	if b := rep.Blobs; b.Files != 1 || b.Bytes != int64(len(wasm.Builtin)) || b.Uploaded < b.Bytes || b.Uploaded > b.Bytes+b.Bytes/10 {
		t.Fatalf("module upload %+v: want 1 file of %d bytes sent about once", b, len(wasm.Builtin))
	}
	for _, line := range []string{"project offline", "project back online"} {
		if !strings.Contains(log.String(), line) {
			t.Fatalf("the log has no %q:\n%s", line, log.String())
		}
	}
	f, err := os.Open(filepath.Join(dir, "mandelbrot.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 4*64 || img.Bounds().Dy() != 4*64 {
		t.Fatalf("image of %v", img.Bounds())
	}
}
