package sandbox_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/sandbox"
)

// Demo view and tiling, as testnet/demo's mandelbrotUnits cuts them (its
// defaults: 8 tiles per side of 64 pixels, maxiter 256).
const (
	demoTiles    = 8
	demoTileSize = 64
)

// demoTileArgs returns the arguments testnet/demo gives the mandelbrot tile
// (tx, ty) of the view [-2.2, 0.8] × [-1.5, 1.5].
func demoTileArgs(tx, ty int) []string {
	const x0, y0, span = -2.2, -1.5, 3.0
	step := span / float64(demoTiles)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	ax, ay := x0+float64(tx)*step, y0+float64(ty)*step
	size := strconv.Itoa(demoTileSize)
	return []string{f(ax), f(ay), f(ax + step), f(ay + step), size, size, "256"}
}

// TestBuiltinAppsMatchNative runs the WebAssembly builds of mandelbrot and
// hashchain (apps/wasm) and the native built-ins in-process with the same
// arguments: stdout, exit code and error message must be the same bytes,
// which is what validating a WebAssembly volunteer's result against a
// native one (or two on different architectures) rests on.
func TestBuiltinAppsMatchNative(t *testing.T) {
	cases := []struct {
		app  string
		args []string
	}{
		{"mandelbrot", demoTileArgs(0, 0)},
		{"mandelbrot", demoTileArgs(3, 4)}, // the tile holding the set's main cardioid
		{"mandelbrot", []string{"-2", "-1.5", "1", "1.5", "200", "150", "1000"}},
		{"mandelbrot", []string{"-0.743644786", "0.131825253", "-0.743643786", "0.131826253", "64", "48", "5000"}},
		{"mandelbrot", []string{"0", "0", "0", "1", "10", "10", "10"}}, // refused: x1 <= x0
		{"hashchain", []string{"0", "seed"}},
		{"hashchain", []string{"1000", "hello"}},
		{"hashchain", []string{"50000", "up-pool"}},
		{"hashchain", []string{"x", "seed"}}, // refused: n is not a number
	}
	s := newSandbox(t, sandbox.Config{})
	for _, c := range cases {
		t.Run(c.app+" "+strings.Join(c.args, " "), func(t *testing.T) {
			wantOut, wantExit, wantErr := native(t, c.app, c.args)
			if wantExit == 0 && len(wantOut) == 0 {
				t.Fatal("the native built-in printed nothing")
			}
			out := run(t, s, sandbox.Task{Module: guest(t, c.app), Name: c.app, Args: c.args})
			if !bytes.Equal(out.Output, wantOut) {
				t.Errorf("WebAssembly output (%d bytes) differs from native (%d bytes)", len(out.Output), len(wantOut))
			}
			if out.ExitCode != wantExit || out.Stderr != wantErr || out.Killed != "" {
				t.Errorf("WebAssembly: exit %d, stderr %q, killed %q; native: exit %d, stderr %q", out.ExitCode, out.Stderr, out.Killed, wantExit, wantErr)
			}
		})
	}
}

// native runs a built-in in-process and returns its stdout, and the exit
// code and stderr `up app exec` would give (1 and the message for an
// error).
func native(t *testing.T, app string, args []string) (stdout []byte, exit int, stderr string) {
	t.Helper()
	a, ok := apps.Lookup(app)
	if !ok {
		t.Fatalf("no built-in %q", app)
	}
	var buf bytes.Buffer
	if err := a.Main(args, &buf, t.TempDir()); err != nil {
		return buf.Bytes(), 1, err.Error() + "\n"
	}
	return buf.Bytes(), 0, ""
}
