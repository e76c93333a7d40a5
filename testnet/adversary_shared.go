package testnet

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// handleManyBoth registers h, a Byzantine node's handler of a many-job
// claim protocol's first version (wire.ProtoClaimMany or
// ProtoConfirmMany), under that protocol and under its shared version
// (ProtoClaimManyShared, ProtoConfirmManyShared): the shared request
// rebuilt as the first version's, h's answer shared as an honest node
// shares its own. So a client lies to whichever version it asks.
func handleManyBoth(ep *overlay.Endpoint, proto string, maxReq int, roles []certs.Role, h overlay.Handler) {
	ep.Handle(protocol.ID(proto), maxReq, roles, h)
	switch proto {
	case wire.ProtoClaimMany:
		ep.Handle(wire.ProtoClaimManyShared, maxReq, roles, func(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
			var shared wire.ClaimManySharedRequest
			b, err := unshare(body, &shared, func() (any, error) { return shared.Unshared() })
			if err != nil {
				return nil, err
			}
			out, err := h(ctx, from, b)
			if err != nil {
				return nil, err
			}
			return wire.ShareClaimManyResponse(out.(*wire.ClaimManyResponse))
		})
	case wire.ProtoConfirmMany:
		ep.Handle(wire.ProtoConfirmManyShared, maxReq, roles, func(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
			var shared wire.ConfirmManySharedRequest
			b, err := unshare(body, &shared, func() (any, error) { return shared.Unshared() })
			if err != nil {
				return nil, err
			}
			out, err := h(ctx, from, b)
			if err != nil {
				return nil, err
			}
			return wire.ShareConfirmManyResponse(out.(*wire.ConfirmManyResponse))
		})
	default:
		panic(fmt.Sprintf("handleManyBoth: %s has no shared version", proto))
	}
}

// unshare decodes body into shared and returns the first version's
// request (rebuilt by unshared) encoded.
func unshare(body []byte, shared wire.Validator, unshared func() (any, error)) ([]byte, error) {
	if err := wire.Decode(body, shared); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	req, err := unshared()
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return wire.Marshal(req)
}
