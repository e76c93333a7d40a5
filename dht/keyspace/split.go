package keyspace

import "math/bits"

// MovedBy returns how many of items a newcomer landing anywhere in
// FlipPrefix(x, d) would be strictly closer to than x is: exactly the items
// whose bit d differs from x's bit d. d is clamped to [0, 255] as in
// FlipPrefix.
//
// Why: let y be any point of FlipPrefix(x, d), so y agrees with x on bits
// 0..d-1 and differs at bit d. For any item i, i XOR x and i XOR y then agree
// on bits 0..d-1 and differ at bit d, so whichever has a 0 there is the
// smaller distance; (i XOR y) has the 0 exactly when bit d of i differs from
// bit d of x. This does not depend on where in the region y lands, and it
// covers every item, including those with CommonPrefixLen(i, x) < d (they
// move when their bit d differs from x's, even though they do not share x's
// first d bits). Items with CommonPrefixLen(i, x) == d always move, and items
// with CommonPrefixLen(i, x) > d never do.
//
// If x was the closest node for those items, y is now closer than every
// node, so it becomes their closest node: the move count is exact, not an
// estimate.
func MovedBy(x Pos, d int, items []Pos) int {
	d = min(max(d, 0), Bits-1)
	b := x.Bit(d)
	n := 0
	for i := range items {
		if items[i].Bit(d) != b {
			n++
		}
	}
	return n
}

// SplitPoint chooses where a newcomer should land to split a heavy node's
// load. Given the heavy node's position x and the positions of the items it
// holds (those for which it is the closest node), it returns the bit d in
// [0, 255] at which a newcomer landing in FlipPrefix(x, d) would take the
// share of items closest to half, and that share, moved = MovedBy(x, d,
// items).
//
// Exact guarantee: a newcomer anywhere in FlipPrefix(x, d) is strictly
// closer than x to exactly the items whose bit d differs from x's bit d, and
// to no others; this is the count returned. Note this is not "the items with
// CommonPrefixLen(item, x) == d": those always move, but so do the items with
// CommonPrefixLen(item, x) < d whose bit d differs from x's (see MovedBy).
// Bits below the common prefix of all items with x never move anything, so
// for items that all share a prefix with x the chosen d lies at or beyond it.
//
// d minimises |2·moved - len(items)|; ties go to the smaller d (the larger
// landing region). ok is false when items is empty (then d = 0, moved = 0)
// and also when no bit divides the items into two non-empty parts, i.e.
// the best move takes none or all of them (every item equals x, or there is
// a single item); d and moved are still the best found then.
//
// It runs in O(len(items) · 32) plus the set bits of each item's distance.
func SplitPoint(x Pos, items []Pos) (d int, moved int, ok bool) {
	if len(items) == 0 {
		return 0, 0, false
	}
	var counts [Bits]int
	for i := range items {
		diff := Distance(items[i], x)
		for j, b := range diff {
			for b != 0 {
				k := bits.LeadingZeros8(b)
				counts[8*j+k]++
				b &^= 0x80 >> uint(k)
			}
		}
	}
	n := len(items)
	bestScore := -1
	for i, c := range counts {
		score := 2*c - n
		if score < 0 {
			score = -score
		}
		if bestScore < 0 || score < bestScore {
			d, moved, bestScore = i, c, score
		}
	}
	return d, moved, moved > 0 && moved < n
}
