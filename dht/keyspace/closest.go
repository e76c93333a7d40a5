package keyspace

import "slices"

// smallN is the largest n for which ClosestIndices keeps a sorted window of
// the best n instead of sorting every index.
const smallN = 16

// SortByDistance sorts ps in place by XOR distance to target, closest first.
// Distinct positions never tie; equal positions keep their relative order
// (the sort is stable).
func SortByDistance(target Pos, ps []Pos) {
	slices.SortStableFunc(ps, func(a, b Pos) int { return cmpDist(&target, &a, &b) })
}

// ClosestIndices returns the indices into ps of the n positions closest to
// target, closest first; equal positions come in index order. n is clamped
// to len(ps); n <= 0 gives an empty slice. For n <= 16 it runs in one pass
// keeping a sorted window of the best n (O(len(ps)·n) worst case, near
// O(len(ps)) typically); for larger n it sorts all indices. ps is not
// modified.
func ClosestIndices(target Pos, ps []Pos, n int) []int {
	n = min(n, len(ps))
	if n <= 0 {
		return []int{}
	}
	if n > smallN {
		idx := make([]int, len(ps))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmpDist(&target, &ps[a], &ps[b]) })
		return slices.Clip(idx[:n])
	}
	best := make([]int, 0, n)
	for i := range ps {
		p := &ps[i]
		if len(best) == n && cmpDist(&target, p, &ps[best[n-1]]) >= 0 {
			continue
		}
		j := len(best)
		for j > 0 && cmpDist(&target, p, &ps[best[j-1]]) < 0 {
			j--
		}
		if len(best) < n {
			best = append(best, 0)
		}
		copy(best[j+1:], best[j:len(best)-1])
		best[j] = i
	}
	return best
}

// Closest returns the index of the position in ps closest to target (the
// lowest such index if it occurs more than once), or -1 for empty ps.
func Closest(target Pos, ps []Pos) int {
	best := -1
	for i := range ps {
		if best < 0 || cmpDist(&target, &ps[i], &ps[best]) < 0 {
			best = i
		}
	}
	return best
}
