package claimclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/wire"
)

// submitRetry is how a result's delivery is retried: tries attempts in
// all, waiting first after the first and doubling up to 16×first.
type submitRetry struct {
	tries int
	first time.Duration
}

// Default delivery retries: 6 attempts over about 30 s, long enough for
// the replicas that stored the result to hand it to the others.
const (
	submitTries = 6
	submitFirst = time.Second
)

// SetSubmitBackoff sets how SubmitResult retries the replicas that did not
// store a result: tries attempts in all (at least 1), waiting first after
// the first attempt and doubling up to 16×first. Set it before the first
// submit; the default is 6 attempts from 1 s.
func (c *Claimer) SetSubmitBackoff(first time.Duration, tries int) {
	c.retry = submitRetry{tries: max(tries, 1), first: first}
}

// majority is how many of a job's r replicas must store a result before
// it counts as delivered: ⌊r/2⌋+1.
func majority(r int) int { return r/2 + 1 }

// SubmitResult delivers a sealed result to the job's replicas and reports
// how many stored it. It is delivered once a majority of the r replicas
// stored it (each acknowledged its store): one copy can be lost with its
// node, and the job would then be finished everywhere with its result
// nowhere. It sends the result to every node of the claim, then retries,
// with backoff, the claim's nodes that did not store it and the job's
// current closest nodes (a lookup: the claim's nodes may have moved on or
// died); meanwhile a replica that stored it hands it on to the others,
// which then acknowledge it too. When a majority cannot be reached, the
// error says how many stored it; a caller should not release a claim
// whose result some replica stored.
//
// A result sent before the claim's certificate went out (within the
// certify delay) carries the certificate to the nodes that did not accept
// the claim, and the certificate goes on its own only to the claim's
// nodes that did not store the result.
func (c *Claimer) SubmitResult(ctx context.Context, cl *Claim, envelope []byte) (int, error) {
	var cert *wire.CertifyRequest
	if cl.cert != nil {
		cert = cl.cert.take()
	}
	if cert == nil {
		if err := cl.Certified(ctx); err != nil {
			return 0, fmt.Errorf("submit result: %w", err)
		}
	}
	n, err := c.submitResult(ctx, cl, envelope, cert, nil)
	if cert != nil {
		c.certifyUnstored(ctx, cl, cert, n)
	}
	return len(n), err
}

// certifyUnstored sends the certificate a result carried to the claim's
// nodes that did not store the result: they hold the claim without it.
func (c *Claimer) certifyUnstored(ctx context.Context, cl *Claim, cert *wire.CertifyRequest, stored map[string]bool) {
	rest := slices.DeleteFunc(claimNodes(cl), func(n string) bool { return stored[n] })
	if len(rest) > 0 {
		c.fanOut(context.WithoutCancel(ctx), rest, wire.ProtoCertify, cert)
	}
}

// submitResult is SubmitResult's delivery, carrying cert (when not nil)
// to the nodes outside cl.acceptedBy; it returns the nodes that stored the
// result. stored (nil: none) are the nodes that stored it already (a
// many-result delivery): the first attempt sends to the claim's others.
func (c *Claimer) submitResult(ctx context.Context, cl *Claim, envelope []byte, cert *wire.CertifyRequest, stored map[string]bool) (map[string]bool, error) {
	r := c.d.Replication()
	need := majority(r)
	retry := c.retry
	if retry.tries == 0 {
		retry = submitRetry{tries: submitTries, first: submitFirst}
	}
	req := &wire.ResultSubmit{Envelope: envelope, At: c.now().UnixMilli()}
	withCert := *req
	if cert != nil {
		withCert.Start, withCert.Accepts = cert.Start, cert.Accepts
	}
	reqOf := func(n string) any {
		if cert != nil && !cl.acceptedBy[n] {
			return &withCert
		}
		return req
	}
	if stored == nil {
		stored = map[string]bool{}
	}
	last := map[string]error{} // each node's latest refusal or failure
	targets := slices.DeleteFunc(ids(cl.Nodes), func(n string) bool { return stored[n] })
	wait := retry.first
	for attempt := 1; ; attempt++ {
		req.Sent = sentTo(targets)
		withCert.Sent = req.Sent
		for n, err := range c.fanOutTo(ctx, targets, wire.ProtoResult, reqOf) {
			if err != nil {
				last[n] = err
				continue
			}
			stored[n] = true
			delete(last, n)
		}
		if len(stored) >= need {
			c.drop(cl.Job)
			return stored, nil
		}
		if attempt >= retry.tries || !sleep(ctx, wait) {
			break
		}
		wait = min(2*wait, 16*retry.first)
		// Near questions to the claim's nodes first; the last retry
		// looks the job up (a near answer is one node's word).
		targets = c.unstored(ctx, cl, stored, attempt+1 >= retry.tries)
	}
	errs := make([]error, 0, len(last))
	for n, err := range last {
		errs = append(errs, fmt.Errorf("node %s: %w", peer.ID(n), err))
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return stored, fmt.Errorf("result of job %x not delivered: %d of its %d replicas stored it, a majority is %d: %w",
		cl.Job, len(stored), r, need, errors.Join(errs...))
}

// sentTo is ResultSubmit.Sent for an attempt to targets (at most
// wire.MaxResultSent of them).
func sentTo(targets []string) [][]byte {
	out := make([][]byte, 0, min(len(targets), wire.MaxResultSent))
	for _, n := range targets[:min(len(targets), wire.MaxResultSent)] {
		out = append(out, []byte(n))
	}
	return out
}

// unstored lists the nodes a result is sent to again: the claim's nodes
// and the job's current closest that have not stored it.
func (c *Claimer) unstored(ctx context.Context, cl *Claim, stored map[string]bool, lookup bool) []string {
	out := slices.DeleteFunc(ids(cl.Nodes), func(n string) bool { return stored[n] })
	for _, n := range ids(c.current(dht.WithPurpose(ctx, dht.PurposeResult), cl, lookup)) {
		if !stored[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
