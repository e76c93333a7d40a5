// Package demo owns `up demo`: the whole system in one process on the
// testnet harness (a test CA, nodes on loopback TCP, a project and worker
// clients) computing the tiles of a Mandelbrot image with redundant
// copies, validated, credited and assembled into a PNG.
package demo
