package overlay

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/up-pool/up/wire"
)

// NotServed reports whether err, from Call, says the peer does not serve
// the protocol asked: a node of an older version. Its callers ask it the
// older protocol instead.
func NotServed(err error) bool {
	var reply *wire.Error
	return (errors.As(err, &reply) && reply.Status == wire.StatusNotFound) || errors.Is(err, msmux.ErrNotSupported[protocol.ID]{})
}
