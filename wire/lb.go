package wire

import (
	"fmt"
	"math"
)

// Load-balancing protocols (nodes only).
const (
	// ProtoLoad asks a node for its load figures.
	ProtoLoad = "/up/lb/load/1.0.0"
	// ProtoSplit asks a heavy node where a newcomer should land to take
	// about half of its load.
	ProtoSplit = "/up/lb/split/1.0.0"
	// ProtoHandover asks a node for the items the caller (which just moved
	// next to it) is now closest to.
	ProtoHandover = "/up/lb/handover/1.0.0"
	// ProtoNudge tells a lighter node that the caller is much heavier:
	// it probes the caller back and, if it agrees, moves next to it.
	ProtoNudge = "/up/lb/nudge/1.0.0"
)

// LoadInfo is a node's load: what the load figure is made of.
type LoadInfo struct {
	_            struct{} `cbor:",toarray"`
	IndexEntries uint32
	ClosestJobs  uint32
	Rate         float64 // requests served per second, recently
	Capacity     float64
	LastMove     int64 // Unix ms, 0 = never
	LastChange   int64 // Unix ms, 0 = never
}

// Validate bounds a decoded LoadInfo.
func (l *LoadInfo) Validate() error {
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0 || math.IsNaN(l.Capacity) || math.IsInf(l.Capacity, 0) || l.Capacity < 0 {
		return fmt.Errorf("load figures out of range: %w", ErrMalformed)
	}
	return nil
}

// SplitResponse tells a newcomer where to land: the region of positions
// (Prefix's first Bits bits), and the weight it would take of the total.
type SplitResponse struct {
	_      struct{} `cbor:",toarray"`
	OK     bool
	Prefix []byte
	Bits   uint16
	Moved  float64
	Total  float64
}

// Validate bounds a decoded SplitResponse.
func (r *SplitResponse) Validate() error {
	if r.OK && (len(r.Prefix) != 32 || r.Bits > 256) {
		return fmt.Errorf("split region of %d bytes, %d bits: %w", len(r.Prefix), r.Bits, ErrMalformed)
	}
	return nil
}

// HandoverResponse counts what a node handed over.
type HandoverResponse struct {
	_       struct{} `cbor:",toarray"`
	Entries uint32
	Jobs    uint32
}

// Validate accepts every HandoverResponse.
func (r *HandoverResponse) Validate() error { return nil }
