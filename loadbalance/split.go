package loadbalance

import (
	"math"

	"github.com/up-pool/up/dht/keyspace"
)

// tieTol is the relative tolerance (of the total weight) within which two
// split points count as equally balanced, so that rounding in the weight
// sums cannot override the smaller-d tie-break.
const tieTol = 1e-9

// Item is something a heavy node holds that a newcomer could take: its
// position and weight.
type Item struct {
	Pos    keyspace.Pos
	Weight float64
}

// Weighted returns the items of a node holding the given index entries and
// closest jobs, weighted WIndex and WJob (p's zero fields defaulted).
func Weighted(indexEntries, closestJobs []keyspace.Pos, p Params) []Item {
	p.ApplyDefaults()
	items := make([]Item, 0, len(indexEntries)+len(closestJobs))
	for _, pos := range indexEntries {
		items = append(items, Item{Pos: pos, Weight: p.WIndex})
	}
	for _, pos := range closestJobs {
		items = append(items, Item{Pos: pos, Weight: p.WJob})
	}
	return items
}

// usable reports whether w is a weight Split counts: positive and finite.
func usable(w float64) bool { return w > 0 && !math.IsInf(w, 1) }

// Split chooses where a newcomer should land to take about half of a heavy
// node's weighted items: the bit d and the target region FlipPrefix(heavy,
// d), the weight moved and the total. ok is false when no bit moves a
// positive weight below the total (nothing to split).
//
// A newcomer anywhere in FlipPrefix(heavy, d) becomes strictly closer than
// heavy to exactly the items whose bit d differs from heavy's bit d (see
// keyspace.MovedBy), so moved is the summed weight of those items, exactly.
// d minimises |2·moved − total|; ties (within 1e-9·total) go to the smaller
// d, the larger landing region. Weights that are not positive and finite are
// ignored. When items hold nothing usable, d = 0 and moved = total = 0.
//
// Items that all share a long prefix with each other but a shorter one with
// heavy (index entries of one wildcard region held by a node outside it)
// all differ from heavy at the first bit where they leave it, and agree with
// each other up to the region's length, so every bit before the region's
// end moves none or all of them; the chosen d then lies beyond the region
// prefix, where they divide.
//
// Split sees only heavy's items, and in the XOR metric a newcomer can also
// take items other nodes hold: if the target region holds no node, the
// newcomer becomes the closest node for all of that region's items, also
// those held by other nodes sharing heavy's first d+1 bits. SplitFrom with
// MinSplitBit of the heavy node's nearest neighbour rules that out.
//
// It runs in O(32·len(items) + 32·256·8): it histograms, for each of the 32
// bytes, the weight per byte value of item XOR heavy, and then spreads each
// byte value's weight over its set bits.
func Split(heavy keyspace.Pos, items []Item) (target keyspace.Region, d int, moved, total float64, ok bool) {
	return SplitFrom(heavy, items, 0, 0)
}

// SplitFrom is Split choosing only among the bits d >= minD (minD clamped
// to [0, 256]; at 256 nothing splits and d = 255), and taking the smallest
// of them whose |2·moved − total| is within slack·total of the best (slack
// 0 is Split's rule; negative counts as 0).
//
// Slack matters because the items a node holds usually divide about evenly
// at every bit past their common prefix, and the exact best is then a
// random one of them, often deep: the newcomer lands very close to the heavy
// node, and the pair leaves ever fewer bits for later splits beyond the
// nearest neighbour. A slack of 0.1 (a split between 45 and 55 % when an
// even one exists) keeps d near the front.
//
// With minD = MinSplitBit(heavy, others), where others include the heavy
// node's nearest neighbour (its closest bucket), no other node shares d
// bits with heavy. Against any other node w the newcomer then wins exactly
// the items heavy wins (both first differ from w at the same bit), so it
// takes exactly moved, all of it from heavy (besides, possibly, items it
// held itself before moving). The restriction rarely costs balance: the
// items heavy holds all agree with it at bit CommonPrefixLen(heavy,
// nearest) (else the neighbour would be closer), so that bit moves none of
// them, and the bits beyond it still divide them unless they end there.
func SplitFrom(heavy keyspace.Pos, items []Item, minD int, slack float64) (target keyspace.Region, d int, moved, total float64, ok bool) {
	minD = min(max(minD, 0), keyspace.Bits)
	hist := new([32][256]float64)
	for i := range items {
		w := items[i].Weight
		if !usable(w) {
			continue
		}
		total += w
		pos := &items[i].Pos
		for j := range hist {
			hist[j][pos[j]^heavy[j]] += w
		}
	}
	var perBit [keyspace.Bits]float64
	for j := range hist {
		for v := 1; v < 256; v++ {
			w := hist[j][v]
			if w == 0 {
				continue
			}
			for k := range 8 {
				if v&(0x80>>k) != 0 {
					perBit[8*j+k] += w
				}
			}
		}
	}
	d = min(minD, keyspace.Bits-1)
	if total == 0 || minD == keyspace.Bits {
		return keyspace.FlipPrefix(heavy, d), d, 0, total, false
	}
	tol := tieTol * total
	best := math.Inf(1)
	for _, m := range perBit[minD:] {
		best = min(best, math.Abs(2*m-total))
	}
	limit := best + max(slack*total, tol)
	for i := minD; i < keyspace.Bits; i++ {
		if math.Abs(2*perBit[i]-total) <= limit {
			d, moved = i, perBit[i]
			break
		}
	}
	ok = moved > tol && moved < total-tol
	return keyspace.FlipPrefix(heavy, d), d, moved, total, ok
}

// MinSplitBit returns the least split bit at which a newcomer can land
// without taking anything from a node other than heavy: 1 + the longest
// CommonPrefixLen of heavy with any of others (positions equal to heavy are
// skipped), or 0 if others is empty. others must include heavy's nearest
// neighbour for the guarantee of SplitFrom to hold.
func MinSplitBit(heavy keyspace.Pos, others []keyspace.Pos) int {
	minD := 0
	for _, o := range others {
		if o != heavy {
			minD = max(minD, keyspace.CommonPrefixLen(heavy, o)+1)
		}
	}
	return minD
}

// Moves reports, for items and a newcomer position y, which items y becomes
// strictly closer to than the heavy node (what the heavy node hands over
// after the move), as indices into items in increasing order; nil if none.
func Moves(heavy, y keyspace.Pos, items []Item) []int {
	var idx []int
	for i := range items {
		if keyspace.CloserTo(items[i].Pos, y, heavy) {
			idx = append(idx, i)
		}
	}
	return idx
}
