package apps

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	a, ok := Lookup(name)
	if !ok {
		t.Fatalf("Lookup(%q) failed", name)
	}
	var out bytes.Buffer
	err := a.Main(args, &out, t.TempDir())
	return out.String(), err
}

func TestNames(t *testing.T) {
	want := []string{"alloc", "burn", "digest", "fail", "hashchain", "hashseq", "mandelbrot", "noop", "sleep", "tee"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		a, ok := Lookup(n)
		if !ok || a.Name != n || a.Main == nil || !strings.HasPrefix(a.Help, n) {
			t.Errorf("Lookup(%q) = %+v, %v", n, a, ok)
		}
	}
	if _, ok := Lookup("/bin/sh"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}

func TestHashchain(t *testing.T) {
	out, err := run(t, "hashchain", "3", "seed")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("seed"))
	for range 3 {
		h = sha256.Sum256(h[:])
	}
	if want := hex.EncodeToString(h[:]) + "\n"; out != want {
		t.Fatalf("hashchain 3 seed = %q, want %q", out, want)
	}
	out, _ = run(t, "hashchain", "0", "")
	if h := sha256.Sum256(nil); out != hex.EncodeToString(h[:])+"\n" {
		t.Fatalf("hashchain 0 \"\" = %q", out)
	}
}

func TestMandelbrot(t *testing.T) {
	args := []string{"-2", "-1.25", "0.5", "1.25", "64", "48", "200"}
	out, err := run(t, "mandelbrot", args...)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 64 || b.Dy() != 48 {
		t.Fatalf("image is %v, want 64x48", b)
	}
	// The centre (-0.75, 0) is in the set (black); the corner (-2, 1.25)
	// escapes at once (light).
	if y, _, _, _ := img.At(50, 24).RGBA(); y != 0 {
		t.Errorf("pixel near (-0.05, 0) = %d, want 0 (in the set)", y)
	}
	if y, _, _, _ := img.At(0, 0).RGBA(); y == 0 {
		t.Errorf("corner pixel is black, want it outside the set")
	}
	again, _ := run(t, "mandelbrot", args...)
	if again != out {
		t.Error("mandelbrot output is not deterministic")
	}
}

func TestSmallApps(t *testing.T) {
	if out, err := run(t, "noop"); out != "" || err != nil {
		t.Errorf("noop = %q, %v", out, err)
	}
	start := time.Now()
	if out, err := run(t, "sleep", "20"); out != "slept\n" || err != nil || time.Since(start) < 20*time.Millisecond {
		t.Errorf("sleep 20 = %q, %v after %v", out, err, time.Since(start))
	}
	if out, err := run(t, "burn", "30"); out != "burned\n" || err != nil {
		t.Errorf("burn 30 = %q, %v", out, err)
	}
	if out, err := run(t, "alloc", "8"); out != "allocated\n" || err != nil {
		t.Errorf("alloc 8 = %q, %v", out, err)
	}
	_, err := run(t, "fail", "3")
	var ee ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("fail 3 = %v, want ExitError{3}", err)
	}
	if _, err := run(t, "fail", "0"); err != nil {
		t.Errorf("fail 0 = %v, want nil", err)
	}
}

// TestDigest: digest prints each named file's SHA-256 and name, in order.
func TestDigest(t *testing.T) {
	dir := t.TempDir()
	data := map[string][]byte{"input0": []byte("first"), "input1": bytes.Repeat([]byte{7}, 100_000)}
	for name, b := range data {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := Lookup("digest")
	var out bytes.Buffer
	if err := a.Main([]string{"input1", "input0"}, &out, dir); err != nil {
		t.Fatal(err)
	}
	var want string
	for _, name := range []string{"input1", "input0"} {
		sum := sha256.Sum256(data[name])
		want += hex.EncodeToString(sum[:]) + "  " + name + "\n"
	}
	if out.String() != want {
		t.Fatalf("digest = %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := a.Main([]string{"-rounds", "2", "input0"}, &out, dir); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data["input0"])
	s = sha256.Sum256(s[:])
	s = sha256.Sum256(s[:])
	if want := hex.EncodeToString(s[:]) + "  input0\n"; out.String() != want {
		t.Fatalf("digest -rounds 2 = %q, want %q", out.String(), want)
	}
}

func TestBadArgs(t *testing.T) {
	for _, tc := range []struct {
		app  string
		args []string
		name string // must appear in the error
	}{
		{"hashchain", []string{"x", "seed"}, "argument n"},
		{"hashchain", []string{"-1", "seed"}, "argument n"},
		{"hashchain", []string{"1000000001", "seed"}, "argument n"},
		{"hashchain", []string{"1"}, "want 2 argument"},
		{"mandelbrot", []string{"a", "0", "1", "1", "1", "1", "1"}, "argument x0"},
		{"mandelbrot", []string{"0", "NaN", "1", "1", "1", "1", "1"}, "argument y0"},
		{"mandelbrot", []string{"0", "0", "0", "1", "1", "1", "1"}, "argument x1"},
		{"mandelbrot", []string{"0", "0", "1", "-Inf", "1", "1", "1"}, "argument y1"},
		{"mandelbrot", []string{"0", "0", "1", "1", "0", "1", "1"}, "argument width"},
		{"mandelbrot", []string{"0", "0", "1", "1", "1", "1.5", "1"}, "argument height"},
		{"mandelbrot", []string{"0", "0", "1", "1", "4096", "4097", "1"}, "width and height"},
		{"mandelbrot", []string{"0", "0", "1", "1", "1", "1", "100001"}, "argument maxiter"},
		{"mandelbrot", []string{"0", "0", "1", "1", "1", "1"}, "want 7 argument"},
		{"sleep", []string{"-5"}, "argument ms"},
		{"burn", []string{"soon"}, "argument ms"},
		{"alloc", []string{"1099511627777"}, "argument mb"},
		{"fail", []string{"256"}, "argument code"},
		{"fail", nil, "want 1 argument"},
		{"digest", nil, "want 1 to 64 file names"},
		{"digest", []string{"-rounds", "x", "input0"}, "argument rounds"},
		{"digest", []string{"-rounds", "3"}, "want 1 to 64 file names"},
		{"digest", []string{"../etc/passwd"}, "inside the work directory"},
		{"digest", []string{"/etc/passwd"}, "inside the work directory"},
		{"digest", []string{"input0"}, "file input0: not found"},
	} {
		_, err := run(t, tc.app, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.name) || !strings.HasPrefix(err.Error(), tc.app+": ") {
			t.Errorf("%s %q: error %v, want one naming %q", tc.app, tc.args, err, tc.name)
		}
	}
}

// TestHashseq: steps chain in order to hashchain's digest; a checkpoint
// of the wrong length or a corrupt one is refused.
func TestHashseq(t *testing.T) {
	var ck []byte
	for step := int64(1); step <= 3; step++ {
		var err error
		if ck, err = HashseqStep(ck, 10, "s", step); err != nil {
			t.Fatal(err)
		}
	}
	want := Hashchain(30, "s")
	lines := strings.Split(strings.TrimSpace(string(ck)), "\n")
	if len(lines) != 3 || lines[2] != "step 3 "+hex.EncodeToString(want[:]) {
		t.Fatalf("checkpoint %q, want 3 lines ending in hashchain 30", ck)
	}
	if _, err := HashseqStep(ck, 10, "s", 3); err == nil {
		t.Fatal("step 3 again from a 3-step checkpoint")
	}
	if _, err := HashseqStep([]byte("step 1 zz\n"), 10, "s", 2); err == nil {
		t.Fatal("corrupt digest accepted")
	}
}
