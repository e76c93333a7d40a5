package index

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// selectPlaces runs 200 selections of n = 4 from a table whose 25 oldest
// entries are four batches' of five jobs each (with places, withPlaces)
// and five jobs placed alone, and returns how many answers were all of
// one batch and how many of batches' jobs mixed places. No entry is
// served twice (served entries are quarantined).
func selectPlaces(t *testing.T, withPlaces bool) (onePlace, mixed int) {
	t.Helper()
	const n = 4
	for seed := range uint64(200) {
		tb := NewTable(Config{LMin: 25, LFactor: 1e-12})
		rng := newRNG(seed)
		for i := range 25 {
			e := entry("k", i, int64(i))
			if withPlaces && i < 20 {
				e.Place = []byte(fmt.Sprintf("root%d", i%4))
			}
			tb.Put(e, t0)
		}
		s := tb.Select(MustParse("k"), "k", n, t0, rng)
		if len(s) != n {
			t.Fatalf("seed %d: %d entries, want %d", seed, len(s), n)
		}
		same, placeless := true, 0
		for _, e := range s {
			same = same && len(e.Place) > 0 && bytes.Equal(e.Place, s[0].Place)
			if len(e.Place) == 0 {
				placeless++
			}
		}
		switch {
		case same:
			onePlace++
		case placeless == 0:
			mixed++
		}
		next := tb.Select(MustParse("k"), "k", n, t0, rng)
		for _, a := range next {
			for _, b := range s {
				if bytes.Equal(a.Job, b.Job) {
					t.Fatalf("seed %d: job %s served twice", seed, a.Job)
				}
			}
		}
	}
	return onePlace, mixed
}

// TestSelectServesOnePlace: an answer is all of one batch whenever its
// first pick is a batch's job, so a client can claim its jobs together,
// and never mixes batches; the first pick stays uniform over the l
// oldest (an answer is of one batch about as often as a batch's job is
// drawn first: 20 of 25, so about 160 of 200). Negative control: the
// uniform draw of before, over the same entries, mixes places.
func TestSelectServesOnePlace(t *testing.T) {
	one, mixed := selectPlaces(t, true)
	t.Logf("by place: %d of 200 answers of one batch, %d mixing batches", one, mixed)
	if one < 130 || one > 190 || mixed != 0 {
		t.Errorf("%d answers of one batch and %d mixing batches of 200; want about 160 and none", one, mixed)
	}
	if none, _ := selectPlaces(t, false); none != 0 {
		t.Errorf("%d answers without places counted as one batch", none)
	}

	defer func(d func([]*Entry, int, *rand.Rand) []*Entry) { selectDraw = d }(selectDraw)
	selectDraw = func(cands []*Entry, n int, rng *rand.Rand) []*Entry {
		for i := range n {
			j := i + rng.IntN(len(cands)-i)
			cands[i], cands[j] = cands[j], cands[i]
		}
		return cands[:n]
	}
	uniform, uniformMixed := selectPlaces(t, true)
	t.Logf("control, uniform draw: %d of one batch, %d mixing batches", uniform, uniformMixed)
	if uniform > 20 || uniformMixed == 0 {
		t.Errorf("control: the uniform draw gave %d answers of one batch and %d mixing batches", uniform, uniformMixed)
	}
}
