package client_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/index"
)

// TestQueryFor: the query a machine asks finds the jobs it can run (no
// class, its own memory class or a smaller one, its own platform) and
// none it cannot (a larger memory class, another known OS or
// architecture, an excluded keyword); it parses within the index's bounds
// with the project as its primary keyword.
func TestQueryFor(t *testing.T) {
	const gib = 1 << 30
	linux := client.Attributes{Memory: 8 * gib, OS: "linux", Arch: "amd64"}
	cases := []struct {
		name      string
		a         client.Attributes
		runs, not [][]string // resource keywords of jobs it can / cannot run
	}{
		{
			name: "nothing known", a: client.Attributes{},
			runs: [][]string{nil, {"mem:large"}, {"os:windows"}, {"arch:arm64", "bw:fast"}},
		},
		{
			name: "large linux/amd64", a: linux,
			runs: [][]string{nil, {"mem:large"}, {"mem:small"}, {"os:linux"}, {"arch:amd64", "os:linux", "mem:medium"}, {"os:beos"}},
			not:  [][]string{{"os:windows"}, {"os:darwin"}, {"arch:arm64"}, {"os:linux", "arch:386"}, {"arch:riscv64", "mem:small"}},
		},
		{
			name: "medium darwin/arm64", a: client.Attributes{Memory: 2 * gib, OS: "darwin", Arch: "arm64"},
			runs: [][]string{nil, {"mem:medium"}, {"mem:small", "os:darwin", "arch:arm64"}},
			not:  [][]string{{"mem:large"}, {"os:linux"}, {"arch:amd64"}, {"os:darwin", "arch:amd64"}},
		},
		{
			name: "modem", a: client.Attributes{Bandwidth: 56_000},
			runs: [][]string{nil, {"mem:large"}},
			not:  [][]string{{"bw:medium"}, {"bw:high"}},
		},
		{
			name: "dsl", a: client.Attributes{Bandwidth: 5_000_000},
			runs: [][]string{nil, {"bw:medium"}},
			not:  [][]string{{"bw:high"}},
		},
		{
			name: "fibre", a: client.Attributes{Bandwidth: 1_000_000_000},
			runs: [][]string{{"bw:medium"}, {"bw:high"}},
		},
		{
			name: "small, excluding bw:fast", a: client.Attributes{Memory: 256 << 20, OS: "linux", Exclude: []string{"bw:fast", "os:windows"}},
			runs: [][]string{nil, {"mem:small"}, {"bw:slow"}, {"arch:s390x"}},
			not:  [][]string{{"mem:medium"}, {"mem:large"}, {"bw:fast"}, {"os:windows"}, {"os:freebsd"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qs := client.QueryFor("lhc", c.a)
			q, err := index.Parse(qs)
			if err != nil {
				t.Fatalf("QueryFor = %q: %v", qs, err)
			}
			if p, err := q.Primary(); err != nil || p != "lhc" {
				t.Fatalf("primary keyword %q, %v; want lhc", p, err)
			}
			if strings.Count(qs, "os:windows") > 1 {
				t.Errorf("a keyword excluded twice: %q", qs)
			}
			match := func(res []string) bool {
				kw := append([]string{"lhc", "lhc:batch"}, res...)
				slices.Sort(kw)
				return q.Match(kw)
			}
			for _, res := range c.runs {
				if !match(res) {
					t.Errorf("%q does not find a job with %v", qs, res)
				}
			}
			for _, res := range c.not {
				if match(res) {
					t.Errorf("%q finds a job with %v", qs, res)
				}
			}
			if q.Match([]string{"cms"}) {
				t.Errorf("%q finds another project's job", qs)
			}
		})
	}
	// The longest query a machine builds still fits the index's bounds.
	worst := client.QueryFor("a-long-project-name", client.Attributes{Memory: 1, OS: "none", Arch: "none",
		Exclude: []string{"bw:modem", "bw:cable", "gpu:none"}})
	if _, err := index.Parse(worst); err != nil {
		t.Fatalf("worst-case query %q: %v", worst, err)
	}
}
