package indexnet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
)

// idxNet is a network with projects whose jobs carry mixed keywords.
type idxNet struct {
	net      *testnet.Network
	clock    *testnet.Clock
	projects []*project.Project
	jobs     map[string][]string // job key → sorted keywords of its listing
	created  map[string]int64
	base     int64
}

// startIdxNetB starts a TCP network for benchmarks.
func startIdxNetB(b *testing.B, nodes int) *idxNet {
	return startIdxNet(b, nodes, 48, testnet.Options{Transport: testnet.TCP})
}

func startIdxNet(t testing.TB, nodes int, seed uint64, opts testnet.Options) *idxNet {
	t.Helper()
	clock := testnet.NewClock(time.Now())
	opts.Nodes, opts.Seed, opts.Now = nodes, seed, clock.Now
	net := testnet.StartNetwork(t, opts)
	return &idxNet{net: net, clock: clock, jobs: map[string][]string{}, created: map[string]int64{}, base: clock.Now().UnixMilli() - 10_000_000}
}

func (in *idxNet) project(t testing.TB, name string) *project.Project {
	t.Helper()
	p, err := in.net.NewProject(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Agent().Close() })
	in.projects = append(in.projects, p)
	return p
}

func (in *idxNet) client(t testing.TB, name string) *agent.Agent {
	t.Helper()
	a, err := in.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

var resourceChoices = [][]string{{"mem:small", "mem:large"}, {"bw:modem", "bw:cable"}, {"os:linux", "os:win"}}

// submit submits n jobs of p with random resource classes and distinct,
// increasing creation times, and lists them (the writers' flush).
func (in *idxNet) submit(t *testing.T, p *project.Project, n int, rng *rand.Rand) [][]byte {
	return in.submitB(t, p, n, rng)
}

func (in *idxNet) submitB(t testing.TB, p *project.Project, n int, rng *rand.Rand) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prepared := in.prepare(t, p, n, rng)
	keys := make([][]byte, n)
	for i, r := range p.Submit(ctx, prepared) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		keys[i] = prepared[i].Key()
	}
	in.net.FlushAll(ctx)
	return keys
}

// prepare builds and signs n jobs of p with random resource classes and
// distinct, increasing creation times.
func (in *idxNet) prepare(t testing.TB, p *project.Project, n int, rng *rand.Rand) []*project.Prepared {
	prepared := make([]*project.Prepared, n)
	for i := range prepared {
		spec, err := p.NewSpec("hashchain", []string{fmt.Sprint(i)}, []string{p.Name(), "batch:" + p.Name()}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, choice := range resourceChoices {
			spec.Resources = append(spec.Resources, choice[rng.IntN(len(choice))])
		}
		in.base += 1000
		spec.Created = in.base
		if prepared[i], err = p.Sign(spec); err != nil {
			t.Fatal(err)
		}
		kw := append([]string{p.Name(), "batch:" + p.Name()}, spec.Resources...)
		slices.Sort(kw)
		in.jobs[string(prepared[i].Key())] = kw
		in.created[string(prepared[i].Key())] = spec.Created
	}
	return prepared
}

// matching lists the submitted jobs a query matches.
func (in *idxNet) matching(q *index.Query) map[string]bool {
	out := map[string]bool{}
	for k, kw := range in.jobs {
		if q.Match(kw) {
			out[k] = true
		}
	}
	return out
}

// TestFindQueries: 32 nodes, 2,000 ready jobs of 4 projects with mixed
// keywords: every query returns only matching entries, every matching job
// is found within a bounded number of queries, the oldest first on average.
func TestFindQueries(t *testing.T) {
	in := startIdxNet(t, 32, 41, testnet.Options{})
	rng := rand.New(rand.NewPCG(41, 41))
	for _, name := range []string{"lhc", "cms", "atlas", "alice"} {
		in.submit(t, in.project(t, name), 500, rng)
	}
	cl := in.client(t, "worker")
	ctx := context.Background()
	for _, qs := range []string{
		"lhc",
		"lhc AND mem:small AND NOT bw:modem",
		"(cms OR atlas) AND os:linux",
		"alice bw:cable (mem:large OR os:win)",
	} {
		in.clock.Advance(3 * time.Minute) // the last query's quarantine ends
		q := index.MustParse(qs)
		want := in.matching(q)
		found := map[string]bool{}
		var servedAge, presentAge float64
		queries, firstN := 0, 0
		const n = 16
		bound := len(want)/n + 4
		for queries < bound {
			hits, err := cl.Index().Find(ctx, qs, n)
			queries++
			if errors.Is(err, indexclient.ErrNoJob) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", qs, err)
			}
			for _, h := range hits {
				if !q.Match(in.jobs[string(h.Job)]) || !q.Match(h.Keywords) {
					t.Fatalf("%s: served job with keywords %v", qs, in.jobs[string(h.Job)])
				}
				if found[string(h.Job)] {
					t.Fatalf("%s: job served twice while quarantined", qs)
				}
				found[string(h.Job)] = true
				if firstN < len(want)/4 {
					servedAge += float64(in.base - h.Created)
					firstN++
				}
			}
		}
		if len(found) != len(want) {
			t.Fatalf("%s: found %d of %d matching jobs in %d queries", qs, len(found), len(want), queries)
		}
		for k := range want {
			presentAge += float64(in.base - in.created[k])
		}
		t.Logf("%-40s %4d jobs in %3d queries; mean age of the first quarter served %.0f s, of all present %.0f s",
			qs, len(want), queries, servedAge/float64(max(firstN, 1))/1000, presentAge/float64(len(want))/1000)
		if servedAge/float64(max(firstN, 1)) <= presentAge/float64(len(want)) {
			t.Fatalf("%s: the first served are not older than the average", qs)
		}
	}
}
