package overlay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// RefusedError is a peer's refusal of this party's hello, with its reason.
type RefusedError struct {
	Peer   peer.ID
	Code   wire.Refusal
	Reason string // the refusing peer's words
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("peer %s refused us: %s (%s)", e.Peer, e.Code, e.Reason)
}

// AboutUs reports whether the refusal is about this party's own
// certificate (revoked, expired, another CA's, wrong role): every peer of
// the network will refuse it, so retrying cannot help.
func (e *RefusedError) AboutUs() bool { return e.Code.AboutSender() }

// RefusedAboutUs returns the refusal when every one of errs (at least one)
// is a peer refusing this party for a reason about itself.
func RefusedAboutUs(errs []error) (*RefusedError, bool) {
	var first *RefusedError
	for _, err := range errs {
		var r *RefusedError
		if !errors.As(err, &r) || !r.AboutUs() {
			return nil, false
		}
		if first == nil {
			first = r
		}
	}
	return first, first != nil
}

// refusalOf classifies an admission error for the refused peer.
func refusalOf(err error) wire.Refusal {
	switch {
	case errors.Is(err, certs.ErrRevoked):
		return wire.RefusalRevoked
	case errors.Is(err, certs.ErrExpired) || errors.Is(err, certs.ErrNotYetValid):
		return wire.RefusalExpired
	case errors.Is(err, certs.ErrUnknownIssuer):
		return wire.RefusalForeignCA
	case errors.Is(err, certs.ErrWrongRole):
		return wire.RefusalWrongRole
	}
	return wire.RefusalOther
}

// answers holds, per peer, how it answered this party's hello: nil when
// it admitted us, a *RefusedError when it refused us, another error when
// the handshake failed. Join waits for it.
type answers struct {
	mu sync.Mutex
	m  map[peer.ID]*answer
}

type answer struct {
	done chan struct{}
	err  error
}

// maxAnswers bounds the answers kept for peers no longer connected.
const maxAnswers = 4096

func (a *answers) get(p peer.ID) *answer {
	if a.m == nil {
		a.m = map[peer.ID]*answer{}
	}
	an := a.m[p]
	if an == nil {
		if len(a.m) >= maxAnswers {
			for q, old := range a.m {
				if isDone(old.done) {
					delete(a.m, q)
				}
			}
		}
		an = &answer{done: make(chan struct{})}
		a.m[p] = an
	}
	return an
}

// settle records p's answer, waking anyone waiting for it.
func (a *answers) settle(p peer.ID, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	an := a.get(p)
	if isDone(an.done) {
		an = &answer{done: make(chan struct{})}
		a.m[p] = an
	}
	an.err = err
	close(an.done)
}

// reset forgets p's answer: the next hello on a new connection gives it.
func (a *answers) reset(p peer.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if an := a.m[p]; an != nil && isDone(an.done) {
		delete(a.m, p)
	}
}

// wait returns p's answer, once it has one or ctx ends.
func (a *answers) wait(ctx context.Context, p peer.ID) error {
	a.mu.Lock()
	an := a.get(p)
	a.mu.Unlock()
	select {
	case <-an.done:
		return an.err
	case <-ctx.Done():
		return fmt.Errorf("peer %s did not answer our hello: %w", p, ctx.Err())
	}
}
