package project

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// Adaptive replication (BOINC's, decided at validation time). A unit of a
// job file with adaptive: true is sent as one copy. When its first
// successful result is validated, the harvest decides, from this project's
// ledger alone, whether that result stands alone or the unit is
// replicated (decideAdaptive), and records why (the ledger's adaptive
// table):
//
//   - AdaptiveSingle: the result's client is trusted (Trusted) and the
//     unit is not drawn for a spot check (SpotCheck): the result is
//     canonical alone and earns its credit as any valid result.
//   - AdaptiveSpotCheck: the client is trusted but the unit is drawn: it
//     gets another copy and is validated by quorum 2.
//   - AdaptiveReplicated: the client is not trusted: likewise.
//
// The project cannot choose who claims a copy, so it chooses, once a
// result is in, whether to believe it alone.
const (
	AdaptiveSingle     = "single"
	AdaptiveSpotCheck  = "spot-check"
	AdaptiveReplicated = "replicated"
)

// AdaptivePolicy is the trust rule and the spot-check rate of adaptive
// replication (HarvestOptions.Adaptive). Zero fields take the defaults.
type AdaptivePolicy struct {
	// MinValid is the least number of valid results among the client's
	// latest Window graded ones for it to be trusted. Default 10.
	MinValid int
	// Window is how many of the client's latest graded results (in this
	// project's ledger; duplicates left out) the rule looks at: none may
	// be invalid or failed. Default 20.
	Window int
	// SpotCheck is the probability that a trusted client's result is
	// replicated anyway. Default 0.1; negative: never.
	SpotCheck float64
	// Seed keys the spot-check draw; nil: the ledger's own secret seed
	// (Ledger.AdaptiveSeed), made once when the ledger first needs it.
	Seed []byte
}

// Adaptive replication defaults (AdaptivePolicy).
const (
	DefaultTrustMinValid  = 10
	DefaultTrustWindow    = 20
	DefaultSpotCheckRatio = 0.1
)

// withDefaults fills the zero fields of p. Pure.
func (p AdaptivePolicy) withDefaults() AdaptivePolicy {
	if p.MinValid == 0 {
		p.MinValid = DefaultTrustMinValid
	}
	if p.Window == 0 {
		p.Window = DefaultTrustWindow
	}
	if p.Window < p.MinValid {
		p.Window = p.MinValid
	}
	if p.SpotCheck == 0 {
		p.SpotCheck = DefaultSpotCheckRatio
	}
	return p
}

// Trusted reports whether a client whose latest graded results are
// latest (newest first, true for valid; a client's duplicate copies left
// out) may have a result accepted alone: at least minValid valid among
// its latest window and none invalid or failed among them. So a new
// client needs minValid valid results, every one checked by a quorum,
// and a client with one invalid result needs window more valid ones
// before it is trusted again. Pure.
func Trusted(latest []bool, minValid, window int) bool {
	if minValid <= 0 {
		return true
	}
	valid := 0
	for i, ok := range latest {
		if i >= window {
			break
		}
		if !ok {
			return false
		}
		valid++
	}
	return valid >= minValid
}

// spotCheckDomain separates the spot-check draw from other uses of the
// seed.
const spotCheckDomain = "up/adaptive/spot-check/1"

// SpotCheck reports whether the unit is drawn for a spot check: the
// first 8 bytes of sha256(domain ‖ seed ‖ unit), as a fraction of 2⁶⁴,
// fall below p. The same seed and unit always draw the same; without
// the seed (a secret of the project's ledger) a client cannot tell which
// units are drawn. Pure.
func SpotCheck(seed []byte, unit int64, p float64) bool {
	if p <= 0 {
		return false
	}
	if p >= 1 {
		return true
	}
	h := sha256.New()
	h.Write([]byte(spotCheckDomain))
	h.Write(seed)
	var u [8]byte
	binary.BigEndian.PutUint64(u[:], uint64(unit))
	h.Write(u[:])
	x := binary.BigEndian.Uint64(h.Sum(nil)[:8])
	return float64(x) < p*math.Exp2(64)
}

// decideAdaptive is the fate of an adaptive unit's first successful
// result: accepted alone (AdaptiveSingle), or the unit replicated
// (AdaptiveSpotCheck, AdaptiveReplicated). Pure.
func decideAdaptive(trusted, drawn bool) string {
	switch {
	case !trusted:
		return AdaptiveReplicated
	case drawn:
		return AdaptiveSpotCheck
	}
	return AdaptiveSingle
}

// AdaptiveReport counts the adaptive decisions a harvest made.
type AdaptiveReport struct {
	Single      int // results accepted alone: trusted client, not drawn
	SpotChecked int // trusted client, unit drawn for a spot check: replicated
	Replicated  int // client not trusted: replicated
}

// add counts one decision.
func (r *AdaptiveReport) add(decision string) {
	switch decision {
	case AdaptiveSingle:
		r.Single++
	case AdaptiveSpotCheck:
		r.SpotChecked++
	case AdaptiveReplicated:
		r.Replicated++
	}
}
