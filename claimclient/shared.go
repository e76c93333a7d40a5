package claimclient

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// The many-job claim and result protocols with shared replies
// (wire.ProtoClaimManyShared, ProtoConfirmManyShared,
// ProtoResultManyShared): a request goes
// the shared way to a node that serves it, the first way to one that
// does not (remembered, as an older node) or when a reply it carries is
// not in a signed reply's canonical layout (wire.ShareReplies); the
// answer comes back as the first way's, each reply rebuilt byte for byte
// and checked as before.

// unsharedBound bounds the nodes remembered as not serving the shared
// protocols (the set is emptied when full).
const unsharedBound = 4096

// callClaimMany sends req to node n and fills resp.
func (c *Claimer) callClaimMany(ctx context.Context, n peer.ID, req *wire.ClaimManyRequest, resp *wire.ClaimManyResponse) error {
	shared, err := wire.ShareClaimManyRequest(req)
	var sresp wire.ClaimManySharedResponse
	unshare := func() error { return unsharedInto(resp, sresp.Unshared) }
	if asked, err := c.askShared(ctx, n, wire.ProtoClaimManyShared, shared, err, &sresp, wire.MaxClaimManyBytes, unshare); asked {
		return err
	}
	return c.ep.Call(ctx, n, wire.ProtoClaimMany, req, wire.MaxClaimManyBytes, resp)
}

// callConfirmMany sends req to node n and fills resp.
func (c *Claimer) callConfirmMany(ctx context.Context, n peer.ID, req *wire.ConfirmManyRequest, resp *wire.ConfirmManyResponse) error {
	shared, err := wire.ShareConfirmManyRequest(req)
	var sresp wire.ConfirmManySharedResponse
	unshare := func() error { return unsharedInto(resp, sresp.Unshared) }
	if asked, err := c.askShared(ctx, n, wire.ProtoConfirmManyShared, shared, err, &sresp, wire.MaxClaimManyBytes, unshare); asked {
		return err
	}
	return c.ep.Call(ctx, n, wire.ProtoConfirmMany, req, wire.MaxClaimManyBytes, resp)
}

// callResultMany sends req to node n and fills resp (answers of ~6 bytes
// a result, the same in both versions).
func (c *Claimer) callResultMany(ctx context.Context, n peer.ID, req *wire.ResultManyRequest, resp *wire.ResultManyResponse) error {
	shared, err := wire.ShareResultManyRequest(req)
	if asked, err := c.askShared(ctx, n, wire.ProtoResultManyShared, shared, err, resp, 64<<10, func() error { return nil }); asked {
		return err
	}
	return c.ep.Call(ctx, n, wire.ProtoResultMany, req, 64<<10, resp)
}

// askShared asks node n by proto, a shared version, with the request
// shared (shareErr: it could not be shared), decoding the answer into
// sresp and turning it into the first version's with unshare. asked is
// false when it did not ask, or n does not serve proto (remembered): the
// caller asks the first version.
func (c *Claimer) askShared(ctx context.Context, n peer.ID, proto string, shared any, shareErr error, sresp wire.Validator, max int, unshare func() error) (asked bool, err error) {
	if shareErr != nil || c.isUnshared(n) {
		return false, nil
	}
	err = c.ep.Call(ctx, n, protocol.ID(proto), shared, max, sresp)
	switch {
	case overlay.NotServed(err):
		c.markUnshared(n)
		return false, nil
	case err != nil:
		return true, err
	}
	return true, unshare()
}

// unsharedInto sets *dst to the first version's answer unshared rebuilds.
func unsharedInto[T any](dst *T, unshared func() (*T, error)) error {
	back, err := unshared()
	if err != nil {
		return err
	}
	*dst = *back
	return nil
}

func (c *Claimer) isUnshared(n peer.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unshared[n]
}

func (c *Claimer) markUnshared(n peer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unshared == nil || len(c.unshared) >= unsharedBound {
		c.unshared = map[peer.ID]bool{}
	}
	c.unshared[n] = true
}
