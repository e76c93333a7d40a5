package claimclient

import (
	"context"
	"sync"
	"time"

	"github.com/up-pool/up/wire"
)

// DefaultCertifyDelay is how long a won claim's certificate waits for the
// claim's result before it goes to the claim's nodes on its own. A result
// submitted within it carries the certificate instead, to the nodes that
// did not accept the claim (the others hold the claim and need no proof
// of it: the finished state replaces it), so a short job costs no certify
// round at all. It must stay well under the nodes' T_cert (1 min by
// default): a node voids a claim still without its certificate T_cert
// after accepting it.
const DefaultCertifyDelay = time.Second

// SetCertifyDelay sets how long a won claim's certificate waits for the
// claim's result before it is sent on its own (DefaultCertifyDelay when
// never set; 0 sends it at once). Set it before the first claim.
func (c *Claimer) SetCertifyDelay(d time.Duration) {
	c.certDelay = max(d, 0)
	c.certDelaySet = true
}

// certifyDelay is the delay in force.
func (c *Claimer) certifyDelay() time.Duration {
	if !c.certDelaySet {
		return DefaultCertifyDelay
	}
	return c.certDelay
}

// certDelivery is a won claim's certificate on its way to the claim's
// nodes: sent when the delay ends or someone needs it delivered (kick),
// unless a result submission took it over first (taken).
type certDelivery struct {
	req    *wire.CertifyRequest
	mu     sync.Mutex
	taken  bool // a result carries the certificate instead
	kicked bool
	kick   chan struct{} // closed: stop waiting (send now, or taken)
	done   chan struct{} // closed: delivered, or taken over
}

// startCertify sends cl's certificate to its nodes after the certify
// delay, in the background (see certDelivery).
func (c *Claimer) startCertify(ctx context.Context, cl *Claim) {
	d := &certDelivery{
		req:  &wire.CertifyRequest{Job: cl.Job, Start: cl.Start, Accepts: cl.Accepts},
		kick: make(chan struct{}), done: make(chan struct{}),
	}
	cl.cert = d
	delay := c.certifyDelay()
	go func() {
		defer close(d.done)
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-d.kick:
			}
			t.Stop()
		}
		d.mu.Lock()
		taken := d.taken
		d.kicked = true // no one takes it over from here on
		d.mu.Unlock()
		if !taken {
			c.fanOut(context.WithoutCancel(ctx), claimNodes(cl), wire.ProtoCertify, d.req)
		}
	}()
}

// send makes the delivery go now (when it is still waiting).
func (d *certDelivery) send() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.kicked {
		d.kicked = true
		close(d.kick)
	}
}

// take stops the delivery if it has not begun and returns the
// certificate, for a result submission to carry; nil when it has begun
// (or was taken before).
func (d *certDelivery) take() *wire.CertifyRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.kicked || d.taken {
		return nil
	}
	d.taken, d.kicked = true, true
	close(d.kick)
	return d.req
}

// Certified waits until the claim's certificate was delivered to its
// nodes (each answered or timed out), sending it at once if it still
// waited for the certify delay, or until ctx ends.
func (cl *Claim) Certified(ctx context.Context) error {
	if cl.cert == nil {
		return nil
	}
	cl.cert.send()
	select {
	case <-cl.cert.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
