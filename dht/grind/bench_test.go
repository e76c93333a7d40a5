package grind

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet/testkit"
)

// BenchmarkCandidates measures one secp256k1 worker (one core): ns/op is per
// candidate, cand/s the candidates per second.
func BenchmarkCandidates(b *testing.B) {
	for _, n := range []int{64, DefaultBatch, MaxBatch} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			w := newWorker(tableFor(n), rand.Reader)
			if err := w.reseed(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := testkit.CPUTime()
			var done uint64
			for done < uint64(b.N) {
				tries, _, err := w.batch(&nowhere)
				if err != nil {
					b.Fatal(err)
				}
				done += tries
			}
			b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "cand/s")
			reportCPU(b, done, testkit.CPUTime()-cpu0)
		})
	}
}

// BenchmarkEd25519Candidates measures the Ed25519 grinder's per-candidate
// work on one core: seed, keygen, peer ID, hash, compare.
func BenchmarkEd25519Candidates(b *testing.B) {
	var c ed25519Candidate
	cpu0 := testkit.CPUTime()
	for b.Loop() {
		if err := c.next(rand.Reader); err != nil {
			b.Fatal(err)
		}
		if nowhere.Contains(keyspace.PeerPos(c.id[:])) {
			b.Fatal("hit nowhere")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cand/s")
	reportCPU(b, uint64(b.N), testkit.CPUTime()-cpu0)
}

// reportCPU reports candidates per CPU second (user + system time of the
// whole process, so with several workers it is a per-core rate), which on a
// shared machine is steadier than the wall-clock cand/s.
func reportCPU(b *testing.B, cands uint64, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cands)/cpu.Seconds(), "cand/cpu-s")
	}
}

// benchGrind grinds random regions of the given bits with all cores and
// reports the mean tries and seconds per identity.
func benchGrind(b *testing.B, bits int) {
	rng := mrand.New(mrand.NewPCG(uint64(bits), 1))
	var tries uint64
	var took time.Duration
	cpu0 := testkit.CPUTime()
	for b.Loop() {
		res, err := Secp256k1{}.Grind(context.Background(), randomRegion(rng, bits))
		if err != nil {
			b.Fatal(err)
		}
		tries += res.Tries
		took += res.Elapsed
	}
	b.ReportMetric(float64(tries)/float64(b.N), "tries/op")
	b.ReportMetric(took.Seconds()/float64(b.N), "s/op")
	b.ReportMetric(float64(tries)/took.Seconds(), "cand/s")
	reportCPU(b, tries, testkit.CPUTime()-cpu0)
}

func BenchmarkGrind16(b *testing.B) { benchGrind(b, 16) }

func BenchmarkGrind20(b *testing.B) { benchGrind(b, 20) }

// BenchmarkGrind24 runs only when named explicitly (-bench Grind24): one
// 24-bit identity takes ~16M candidates, seconds on a small machine.
func BenchmarkGrind24(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Grind24") {
		b.Skip("run with -bench Grind24")
	}
	benchGrind(b, 24)
}
