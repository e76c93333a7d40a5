package indexnet_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
)

// claimEverywhere marks a job claimed on all its replicas.
func (in *idxNet) claimEverywhere(t *testing.T, key []byte, client string) {
	t.Helper()
	now := in.clock.Now().UnixMilli()
	st := job.State{Phase: job.Claimed, Client: []byte(client), Start: now, Deadline: now + 3600_000}
	for _, i := range in.net.Holders(key) {
		if _, err := in.net.Node(i).Pool().Apply(key, st); err != nil {
			t.Fatal(err)
		}
	}
}

// entryHolders lists the nodes whose index holds job under keyword.
func (in *idxNet) entryHolders(keyword string, key []byte) []int {
	var out []int
	for i := range in.net.Len() {
		nd := in.net.Node(i)
		if nd == nil {
			continue
		}
		if hits, err := nd.Index().Query(pageAll(keyword)); err == nil {
			for _, h := range hits.Hits {
				if string(h.Job) == string(key) {
					out = append(out, i)
				}
			}
		}
	}
	return out
}

// TestCollisions: two clients querying different keywords at the same
// time rarely get the same job when entries are drawn at random among the
// oldest l; strictly oldest-first, they collide almost always.
func TestCollisions(t *testing.T) {
	rate := func(strict bool) float64 {
		opts := testnet.Options{}
		if strict {
			opts.Index.Server.Table = index.Config{LMin: 1, LFactor: 1e-12}
		}
		in := startIdxNet(t, 16, 42, opts)
		rng := rand.New(rand.NewPCG(42, 42))
		p := in.project(t, "lhc")
		for range 4 { // all jobs carry both queried keywords
			in.submit(t, p, 50, rng)
		}
		a, b := in.client(t, "a"), in.client(t, "b")
		ctx := context.Background()
		collisions, rounds := 0, 0
		for range 60 {
			var ha, hb []byte
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				if hits, err := a.Index().Find(ctx, "lhc", 1); err == nil {
					ha = hits[0].Job
				}
			}()
			go func() {
				defer wg.Done()
				if hits, err := b.Index().Find(ctx, "batch:lhc", 1); err == nil {
					hb = hits[0].Job
				}
			}()
			wg.Wait()
			if ha == nil || hb == nil {
				continue
			}
			rounds++
			if string(ha) == string(hb) {
				collisions++
			}
			// Both claim what they got; the entries are withdrawn.
			in.claimEverywhere(t, ha, "a")
			in.claimEverywhere(t, hb, "b")
			in.net.FlushAll(ctx)
		}
		if rounds < 40 {
			t.Fatalf("only %d rounds found jobs", rounds)
		}
		return float64(collisions) / float64(rounds)
	}
	strict, random := rate(true), rate(false)
	t.Logf("collision rate: strictly oldest-first %.2f, random among the oldest l %.2f", strict, random)
	if random >= strict || random > 0.25 {
		t.Fatalf("random choice among the oldest l does not cut collisions: %.2f vs %.2f", random, strict)
	}
}

// TestWithdrawAndRewrite: a claimed job's entries are gone after one
// withdraw round; an index node killed, its entries are back on other
// nodes within one T_rewrite.
func TestWithdrawAndRewrite(t *testing.T) {
	in := startIdxNet(t, 16, 43, testnet.Options{})
	rng := rand.New(rand.NewPCG(43, 43))
	keys := in.submit(t, in.project(t, "lhc"), 40, rng)
	ctx := context.Background()
	victim := keys[0]
	kws := in.jobs[string(victim)]
	if len(kws) < 5 {
		t.Fatalf("job has keywords %v, want its project's two and three resource classes", kws)
	}
	for _, kw := range kws {
		if h := in.entryHolders(kw, victim); len(h) != 1 {
			t.Fatalf("job listed under %q on %v, want one index node", kw, h)
		}
	}
	in.claimEverywhere(t, victim, "c")
	st := in.net.FlushAll(ctx)
	for _, kw := range kws {
		if h := in.entryHolders(kw, victim); len(h) != 0 {
			t.Fatalf("claimed job still listed under %q on %v after a withdraw round (%+v)", kw, h, st)
		}
	}

	// Kill the node holding the "lhc" entries.
	holder := in.entryHolders("lhc", keys[1])
	if len(holder) != 1 {
		t.Fatalf("job listed on %v", holder)
	}
	if err := in.net.Kill(holder[0]); err != nil {
		t.Fatal(err)
	}
	in.clock.Advance(15*time.Minute + time.Second) // one T_rewrite
	st = in.net.WriteAll(ctx)
	t.Logf("rewrite round after killing index node %d: %+v", holder[0], st)
	for _, k := range keys[1:] {
		if h := in.entryHolders("lhc", k); len(h) == 0 || slices.Contains(h, holder[0]) {
			t.Fatalf("job %x listed on %v after one T_rewrite", k[len(k)-4:], h)
		}
	}
}
