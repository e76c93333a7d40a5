package indexnet_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
)

// TestVerifiedListingsForgotten: an index node remembers the listings it
// verified while their entries are written (a rewrite within the entry
// expiry keeps them) and forgets them with the entries once they are no
// longer written, instead of keeping every listing that ever passed
// through it until the cache is full.
func TestVerifiedListingsForgotten(t *testing.T) {
	// Idle ready jobs get a backup lister's second entry after
	// BackupDelay; this test counts one entry per job.
	opts := testnet.Options{}
	opts.IndexWriter.BackupDelay = time.Hour
	in := startIdxNet(t, 8, 61, opts)
	rng := rand.New(rand.NewPCG(61, 61))
	in.submit(t, in.project(t, "lhc"), 20, rng)
	ctx := context.Background()
	count := func() (verified, entries int) {
		for _, nd := range in.net.Live() {
			nd.Index().Expire()
			verified += nd.Index().VerifiedLen()
			entries += nd.Index().Len()
		}
		return verified, entries
	}
	v0, e0 := count()
	if v0 == 0 || e0 == 0 {
		t.Fatalf("after the writes: %d listings verified, %d entries", v0, e0)
	}
	// Rewritten after T_rewrite (at most 15 min), then past the entry
	// expiry (16 min) counted from the first write: all kept.
	in.clock.Advance(15*time.Minute + time.Second)
	if st := in.net.WriteAll(ctx); st.Rewritten == 0 || st.Failed != 0 {
		t.Fatalf("rewrite round: %+v", st)
	}
	in.clock.Advance(2 * time.Minute)
	if v, e := count(); v != v0 || e != e0 {
		t.Fatalf("rewritten within the expiry: %d listings verified (want %d), %d entries (want %d)", v, v0, e, e0)
	}
	// No longer written: the entries expire and their listings go.
	in.clock.Advance(17 * time.Minute)
	if v, e := count(); v != 0 || e != 0 {
		t.Fatalf("not written for an expiry: %d listings still verified, %d entries", v, e)
	}

	// Claimed: the entries are withdrawn and their listings go at once.
	keys := in.submit(t, in.project(t, "cms"), 20, rng)
	if v, e := count(); v == 0 || e == 0 {
		t.Fatalf("after the writes: %d listings verified, %d entries", v, e)
	}
	for _, k := range keys[:10] {
		in.claimEverywhere(t, k, "c")
	}
	in.net.FlushAll(ctx)
	claimed := map[string]bool{}
	for _, k := range keys[:10] {
		claimed[string(k)] = true
	}
	for _, nd := range in.net.Live() {
		listed := map[string]bool{}
		for kw := range nd.Index().Keywords() {
			resp, err := nd.Index().Query(pageAll(kw))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range resp.Hits {
				if claimed[string(h.Job)] {
					t.Fatalf("claimed job %x still listed under %q", h.Job, kw)
				}
				listed[string(h.Job)] = true
			}
		}
		// One listing per job listed here, none for the claimed ones.
		if v := nd.Index().VerifiedLen(); v != len(listed) {
			t.Fatalf("%s: %d listings verified for %d jobs listed", nd.Name(), v, len(listed))
		}
	}
}
