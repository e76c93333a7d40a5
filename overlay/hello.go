package overlay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// sayHello runs the dialer's side of the handshake on the new connection c:
// send our hello, read and admit theirs.
func (e *Endpoint) sayHello(c network.Conn) {
	p := c.RemotePeer()
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HelloTimeout)
	defer cancel()
	theirs, err := e.exchangeHello(ctx, p)
	e.answers.settle(p, err)
	if err != nil {
		var refused *RefusedError
		switch {
		case e.ctx.Err() != nil:
		case errors.As(err, &refused):
			e.log.Warn("refused by peer", "peer", p, "reason", refused.Code.String(), "err", refused.Reason)
			e.reject(p, fmt.Errorf("hello with %s: %w", p, err))
		case notServingHello(err):
			// Not admitted, so refused and cut off; but no verdict and no
			// block: it may be a node still starting (its host listens
			// before its handlers are set), which the next connection
			// admits, not a foreign peer.
			e.m.Admissions.WithLabelValues("refused").Inc()
			e.log.Debug("peer serves no hello", "peer", p, "err", err)
			_ = c.Close()
		case c.IsClosed() || isTransportError(err) || isTimeout(err):
			// The connection went away under the handshake (a peer that
			// restarted, a duplicate connection closed by the swarm), or
			// the peer was too slow to answer (the stream's deadline or
			// the context's, whichever fired first): no verdict, so no
			// block; the next connection says hello anew.
			e.log.Debug("hello interrupted", "peer", p, "err", err)
			_ = c.Close()
		default:
			e.reject(p, fmt.Errorf("hello with %s: %w", p, err))
		}
		return
	}
	adm, err := e.adm.Admit(p, theirs)
	if err != nil {
		// Their own hello to us, answered by handleHello, tells them why:
		// the connection stays open long enough for that answer.
		e.rejectLater(p, err)
		return
	}
	e.admitted(adm, theirs.CRLNumber)
}

func (e *Endpoint) exchangeHello(ctx context.Context, p peer.ID) (*wire.Hello, error) {
	s, err := e.raw.NewStream(network.WithAllowLimitedConn(ctx, "hello"), p, wire.ProtoHello)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	// A deadline does not bound every call: a stream whose connection
	// went away under it can block CloseWrite for good (mocknet's does,
	// and Endpoint.Close then waited on this hello for ever: CI). When
	// the context ends — the hello's timeout or Close — the stream is
	// reset, which ends any call still blocked on it, the deferred Close
	// included (it runs before stop).
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	if err := wire.WriteFrame(s, e.Hello()); err != nil {
		s.Reset()
		return nil, fmt.Errorf("send hello: %w", err)
	}
	_ = s.CloseWrite()
	var rep wire.Reply
	if err := wire.ReadFrame(bufio.NewReader(s), wire.MaxHelloFrame, &rep); err != nil {
		s.Reset()
		return nil, fmt.Errorf("read hello reply: %w", err)
	}
	if err := rep.Validate(); err != nil {
		return nil, err
	}
	if rep.Status == wire.StatusUnauthorized && len(rep.Body) > 0 {
		var why wire.HelloRefusal
		if err := wire.Decode(rep.Body, &why); err == nil {
			return nil, &RefusedError{Peer: p, Code: why.Code, Reason: why.Reason}
		}
	}
	if rep.Status != wire.StatusOK {
		return nil, fmt.Errorf("refused us: %w", &wire.Error{Status: rep.Status, Msg: rep.Msg})
	}
	var theirs wire.Hello
	if err := wire.Decode(rep.Body, &theirs); err != nil {
		return nil, err
	}
	return &theirs, nil
}

// isTransportError reports whether err is the connection or stream failing
// (reset, closed, cut short) rather than anything the peer said: such a
// failure proves nothing against the peer. A timeout is not one (see
// isTimeout).
func isTransportError(err error) bool {
	return errors.Is(err, network.ErrReset) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// isTimeout reports whether err is a deadline passing: the context's, or
// a stream's (QUIC's "deadline exceeded" wraps os.ErrDeadlineExceeded,
// yamux's is a net.Error that says Timeout). A hello that times out proves
// nothing against the peer either: on a lossy 300 ms path a handshake can
// outlast HelloTimeout, and blocking the peer for BlockFor then cut a
// client off from every replica of the job it was claiming (CI,
// TestNATLifecycle). Its connection is closed, not its peer blocked: a
// peer that holds connections open and never answers gains nothing but
// HelloTimeout per connection, within the resource manager's limits.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// notServingHello reports whether err is the peer answering that it has no
// hello handler. That is no proof against it: a restarting node's host
// accepts connections a moment before it serves the protocol, and blocking
// it would cut it off for BlockFor. A peer that never serves hellos is
// still never admitted: each of its connections is closed.
func notServingHello(err error) bool {
	return errors.Is(err, msmux.ErrNotSupported[protocol.ID]{})
}

// handleHello runs the listener's side: read their hello, admit it, answer
// with ours (or with the reason for refusing).
func (e *Endpoint) handleHello(s network.Stream) {
	defer s.Close()
	p := s.Conn().RemotePeer()
	_ = s.SetDeadline(time.Now().Add(e.cfg.HelloTimeout)) // this machine's timer, not the protocol clock
	var theirs wire.Hello
	err := wire.ReadFrame(bufio.NewReader(s), wire.MaxHelloFrame, &theirs)
	if err != nil && (s.Conn().IsClosed() || isTransportError(err) || isTimeout(err)) {
		// The connection went away mid-hello, or their hello did not
		// arrive within HelloTimeout: no verdict (isTimeout).
		s.Reset()
		return
	}
	var adm *Admitted
	if err == nil {
		adm, err = e.adm.Admit(p, &theirs)
	}
	if err != nil {
		reason := wire.TruncateMsg(err.Error())
		_ = writeReply(s, wire.StatusUnauthorized, reason, &wire.HelloRefusal{Code: refusalOf(err), Reason: reason})
		_ = s.CloseWrite()
		e.rejectLater(p, err) // the reply must reach them before the connection closes
		return
	}
	if err := writeReply(s, wire.StatusOK, "", e.Hello()); err != nil {
		s.Reset()
		return
	}
	e.admitted(adm, theirs.CRLNumber)
}

// handleCRL serves the newest revocation list this party holds.
func (e *Endpoint) handleCRL(_ context.Context, _ *Admitted, body []byte) (any, error) {
	var req wire.CRLRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, StatusErr(wire.StatusBadRequest, err)
	}
	rl := e.cfg.Verifier.RevocationList()
	if rl == nil {
		return &wire.CRLResponse{}, nil
	}
	return &wire.CRLResponse{Number: rl.Number.Uint64(), DER: rl.DER}, nil
}

// fetchCRL fetches p's revocation list and adopts it if it is newer and
// signed by our CA.
func (e *Endpoint) fetchCRL(p peer.ID) {
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HelloTimeout)
	defer cancel()
	var resp wire.CRLResponse
	if err := e.Call(ctx, p, wire.ProtoCRL, &wire.CRLRequest{}, wire.MaxCRLFrame, &resp); err != nil {
		e.log.Debug("fetch revocation list", "peer", p, "err", err)
		return
	}
	if len(resp.DER) == 0 {
		return
	}
	rl, err := certs.ParseRevocationList(resp.DER, e.cfg.Verifier.CA())
	if err != nil {
		e.log.Warn("revocation list from peer refused", "peer", p, "err", err)
		return
	}
	e.AdoptCRL(rl)
}

// AdoptCRL adopts rl if it is newer than the one held, drops the peers it
// revokes, tells connected peers, and reports whether it was adopted.
func (e *Endpoint) AdoptCRL(rl *certs.RevocationList) bool {
	if !e.cfg.Verifier.SetRevocationList(rl) {
		return false
	}
	e.log.Info("revocation list adopted", "number", rl.Number, "revoked", len(rl.Serials()))
	if e.cfg.OnCRL != nil {
		e.cfg.OnCRL(rl)
	}
	e.adm.Revalidate()
	// Spread it: a fresh hello tells each admitted node (the routing
	// table, connected or not) and each connected peer our new number; they
	// fetch the list from us. Each party adopts a list once, so the flood
	// ends.
	targets := map[peer.ID]bool{}
	for _, a := range e.adm.Peers(certs.RoleNode) {
		targets[a.Peer] = true
	}
	for _, p := range e.raw.Network().Peers() {
		if e.adm.IsAdmitted(p) {
			targets[p] = true
		}
	}
	for p := range targets {
		e.goBackground(func() {
			ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HelloTimeout)
			defer cancel()
			if _, err := e.exchangeHello(ctx, p); err != nil {
				e.log.Debug("announce revocation list", "peer", p, "err", err)
			}
		})
	}
	return true
}

// Preadmit admits p from a hello obtained out of band (the testnet's fast
// bootstrap); it runs the same verification as the handshake.
func (e *Endpoint) Preadmit(p peer.ID, hello *wire.Hello) error {
	adm, err := e.adm.Admit(p, hello)
	if err != nil {
		return err
	}
	e.admitted(adm, 0)
	return nil
}

// WaitAdmitted waits until p is admitted, for at most the hello timeout.
func (e *Endpoint) WaitAdmitted(ctx context.Context, p peer.ID) (*Admitted, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.HelloTimeout)
	defer cancel()
	return e.adm.Wait(ctx, p)
}
