package demo_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/demo"
	"github.com/up-pool/up/testnet/testkit"
)

// TestDemo: the embedded default runs end to end: every tile validated,
// credit only for valid results, the assembled image decodes.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{
		Dir: dir, Tiles: 4, Launcher: testkit.Launcher(), LauncherEnv: testkit.LauncherEnv(), Timeout: 90 * time.Second, Log: &log,
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
