package apps

import (
	"bufio"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
)

// Bounds of mandelbrot's arguments.
const (
	maxPixels  = 4096 * 4096
	maxMaxIter = 100_000
)

// mandelArgs are the parsed arguments of mandelbrot.
type mandelArgs struct {
	x0, y0, x1, y1 float64
	width, height  int
	maxiter        int
}

func parseMandelbrot(args []string) (mandelArgs, error) {
	var m mandelArgs
	if err := wantArgs("mandelbrot", args, "x0", "y0", "x1", "y1", "width", "height", "maxiter"); err != nil {
		return m, err
	}
	var err error
	for i, p := range []*float64{&m.x0, &m.y0, &m.x1, &m.y1} {
		name := [...]string{"x0", "y0", "x1", "y1"}[i]
		if *p, err = floatArg("mandelbrot", name, args[i]); err != nil {
			return m, err
		}
	}
	if !(m.x0 < m.x1) {
		return m, fmt.Errorf("mandelbrot: argument x1: must be greater than x0 (%v), got %q", m.x0, args[2])
	}
	if !(m.y0 < m.y1) {
		return m, fmt.Errorf("mandelbrot: argument y1: must be greater than y0 (%v), got %q", m.y0, args[3])
	}
	w, err := intArg("mandelbrot", "width", args[4], 1, maxPixels)
	if err != nil {
		return m, err
	}
	h, err := intArg("mandelbrot", "height", args[5], 1, maxPixels)
	if err != nil {
		return m, err
	}
	if w*h > maxPixels {
		return m, fmt.Errorf("mandelbrot: arguments width and height: width*height = %d exceeds %d (4096*4096)", w*h, maxPixels)
	}
	it, err := intArg("mandelbrot", "maxiter", args[6], 1, maxMaxIter)
	if err != nil {
		return m, err
	}
	m.width, m.height, m.maxiter = int(w), int(h), int(it)
	return m, nil
}

func mandelbrotMain(args []string, stdout io.Writer, _ string) error {
	m, err := parseMandelbrot(args)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(stdout)
	if err := png.Encode(bw, m.render()); err != nil {
		return err
	}
	return bw.Flush()
}

// render computes the tile: pixel (0, 0) is the top-left corner (x0, y1);
// pixels are sampled at their centres. Points in the set are black; points
// that escape after n iterations get gray level 255*sqrt(n/maxiter).
//
// The explicit float64 conversions forbid fused multiply-adds, which Go may
// otherwise use on some architectures (arm64, ppc64, s390x), so every
// platform computes bit-identical images.
func (m mandelArgs) render() *image.Gray {
	img := image.NewGray(image.Rect(0, 0, m.width, m.height))
	dx := (m.x1 - m.x0) / float64(m.width)
	dy := (m.y1 - m.y0) / float64(m.height)
	for py := range m.height {
		ci := m.y1 - float64((float64(py)+0.5)*dy)
		row := img.Pix[py*img.Stride : py*img.Stride+m.width]
		for px := range m.width {
			cr := m.x0 + float64((float64(px)+0.5)*dx)
			n := escape(cr, ci, m.maxiter)
			if n < m.maxiter {
				row[px] = uint8(float64(255 * math.Sqrt(float64(n)/float64(m.maxiter))))
			}
		}
	}
	return img
}

// escape returns the number of iterations of z ← z² + c, from z = 0, before
// |z| > 2, or maxiter if that does not happen.
func escape(cr, ci float64, maxiter int) int {
	var zr, zi float64
	for n := range maxiter {
		zr2, zi2 := float64(zr*zr), float64(zi*zi)
		if zr2+zi2 > 4 {
			return n
		}
		zi = float64(2*zr*zi) + ci
		zr = zr2 - zi2 + cr
	}
	return maxiter
}
