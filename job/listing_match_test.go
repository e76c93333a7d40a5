package job

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeywordsAreListingOfs: keywordsAre (Listing.Matches's keyword check,
// done in place) agrees with comparing against ListingOf's sorted,
// compacted union on random lists, repeats and disorder included; its
// negative control is that the lists it is given differ about half the
// time.
func TestKeywordsAreListingOfs(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	alphabet := []string{"a", "b", "c", "d", "e"}
	pick := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return out
	}
	agreed, equal := 0, 0
	for range 20000 {
		a, b := pick(rng.IntN(4)), pick(rng.IntN(3))
		want := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
		var sorted []string
		switch rng.IntN(3) {
		case 0:
			sorted = slices.Clone(want)
		case 1:
			sorted = pick(rng.IntN(5))
		default:
			sorted = slices.Sorted(slices.Values(pick(rng.IntN(5))))
		}
		ref := slices.Equal(sorted, want)
		if got := keywordsAre(sorted, a, b); got != ref {
			t.Fatalf("keywordsAre(%q, %q, %q) = %v, ListingOf's comparison says %v", sorted, a, b, got, ref)
		}
		agreed++
		if ref {
			equal++
		}
	}
	if equal == 0 || equal == agreed {
		t.Fatalf("%d of %d cases equal: the cases do not exercise both answers", equal, agreed)
	}
}
