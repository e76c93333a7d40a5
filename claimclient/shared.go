package claimclient

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

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
	if !c.isUnshared(n) {
		if shared, err := wire.ShareClaimManyRequest(req); err == nil {
			var sresp wire.ClaimManySharedResponse
			err := c.ep.Call(ctx, n, wire.ProtoClaimManyShared, shared, wire.MaxClaimManyBytes, &sresp)
			if !overlay.NotServed(err) {
				if err != nil {
					return err
				}
				back, err := sresp.Unshared()
				if err != nil {
					return err
				}
				*resp = *back
				return nil
			}
			c.markUnshared(n)
		}
	}
	return c.ep.Call(ctx, n, wire.ProtoClaimMany, req, wire.MaxClaimManyBytes, resp)
}

// callConfirmMany sends req to node n and fills resp.
func (c *Claimer) callConfirmMany(ctx context.Context, n peer.ID, req *wire.ConfirmManyRequest, resp *wire.ConfirmManyResponse) error {
	if !c.isUnshared(n) {
		if shared, err := wire.ShareConfirmManyRequest(req); err == nil {
			var sresp wire.ConfirmManySharedResponse
			err := c.ep.Call(ctx, n, wire.ProtoConfirmManyShared, shared, wire.MaxClaimManyBytes, &sresp)
			if !overlay.NotServed(err) {
				if err != nil {
					return err
				}
				back, err := sresp.Unshared()
				if err != nil {
					return err
				}
				*resp = *back
				return nil
			}
			c.markUnshared(n)
		}
	}
	return c.ep.Call(ctx, n, wire.ProtoConfirmMany, req, wire.MaxClaimManyBytes, resp)
}

// callResultMany sends req to node n and fills resp (answers of ~6 bytes
// a result).
func (c *Claimer) callResultMany(ctx context.Context, n peer.ID, req *wire.ResultManyRequest, resp *wire.ResultManyResponse) error {
	if !c.isUnshared(n) {
		if shared, err := wire.ShareResultManyRequest(req); err == nil {
			err := c.ep.Call(ctx, n, wire.ProtoResultManyShared, shared, 64<<10, resp)
			if !overlay.NotServed(err) {
				return err
			}
			c.markUnshared(n)
		}
	}
	return c.ep.Call(ctx, n, wire.ProtoResultMany, req, 64<<10, resp)
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
