package claimnet

import (
	"errors"
	"strings"
	"sync"

	"github.com/up-pool/up/claim"
)

// whyTally counts why this node denied claims and refused confirms, by a
// short fixed reason (a bounded set: the reason strings of claim.Decide
// and the classes of refuseReason), for diagnosing claims that fail.
type whyTally struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *whyTally) add(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[reason]++
}

func (w *whyTally) snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.n))
	for k, v := range w.n {
		out[k] = v
	}
	return out
}

// refuseReason classes a confirm's refusal into a short fixed reason.
func refuseReason(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, claim.ErrNoTempClaim):
		return "refuse: no temporary claim"
	case errors.Is(err, claim.ErrBadSignature), errors.Is(err, ErrUnbound):
		return "refuse: forged reply"
	case strings.Contains(msg, "released"):
		return "refuse: released"
	case strings.Contains(msg, "job is "):
		return "refuse: job not ready"
	case strings.Contains(msg, "not after the ended claim"):
		return "refuse: start not after the ended claim"
	case strings.Contains(msg, "off this node's clock"):
		return "refuse: start off this clock"
	case strings.Contains(msg, "replies granted") && !strings.Contains(msg, "(0 from nodes not among them)"):
		return "refuse: too few grants from near nodes"
	case strings.Contains(msg, "replies granted"):
		return "refuse: too few grants"
	}
	return "refuse: other"
}
