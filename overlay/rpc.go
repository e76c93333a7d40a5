package overlay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/wire"
)

// Handler answers one request from an admitted peer: body is the request
// frame; the returned value is encoded as the reply body. Return a
// StatusErr to choose the reply status; any other error is internal.
type Handler func(ctx context.Context, from *Admitted, body []byte) (any, error)

// statusError carries a reply status.
type statusError struct {
	status wire.Status
	err    error
}

func (s *statusError) Error() string { return s.err.Error() }
func (s *statusError) Unwrap() error { return s.err }

// StatusErr makes err answer with status.
func StatusErr(status wire.Status, err error) error { return &statusError{status: status, err: err} }

// StatusOf is the reply status a handler's error carries (StatusErr);
// false when it carries none.
func StatusOf(err error) (wire.Status, bool) {
	var se *statusError
	if errors.As(err, &se) {
		return se.status, true
	}
	return 0, false
}

// Handle serves protocol pid: requests of at most maxReq bytes from admitted
// peers whose role is in roles (any role when nil). Others get
// StatusUnauthorized. The protocol is served on a stream per request and
// multiplexed on ProtoMux streams alike.
func (e *Endpoint) Handle(pid protocol.ID, maxReq int, roles []certs.Role, h Handler) {
	reg := &registered{pid: pid, maxReq: maxReq, roles: roles, h: h}
	e.hmu.Lock()
	if e.handlers == nil {
		e.handlers = map[protocol.ID]*registered{}
	}
	e.handlers[pid] = reg
	e.hmu.Unlock()
	e.raw.SetStreamHandler(pid, func(s network.Stream) {
		defer s.Close()
		p := s.Conn().RemotePeer()
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HelloTimeout)
		defer cancel()
		adm, status, msg := e.admit(ctx, p)
		if adm == nil {
			e.m.Refused.WithLabelValues(string(pid)).Inc()
			_ = writeReply(s, status, msg, nil)
			return
		}
		_ = s.SetDeadline(time.Now().Add(e.cfg.HelloTimeout)) // this machine's timer, not the protocol clock
		body, err := wire.ReadRawFrame(bufio.NewReader(s), maxReq)
		if err != nil {
			e.m.RPCFailed.WithLabelValues(string(pid), "in").Inc()
			_ = writeReply(s, wire.StatusBadRequest, err.Error(), nil)
			return
		}
		rep := e.serve(ctx, reg, adm, body)
		bodyErr, err := wire.WriteReply(s, rep)
		if bodyErr != nil {
			e.m.RPCFailed.WithLabelValues(string(pid), "in").Inc()
		}
		if err != nil {
			s.Reset()
		}
	})
}

// registered is one served protocol.
type registered struct {
	pid    protocol.ID
	maxReq int
	roles  []certs.Role
	h      Handler
}

// admit returns the admitted peer p, waiting up to ctx for its hello, or
// the refusal to reply with.
func (e *Endpoint) admit(ctx context.Context, p peer.ID) (*Admitted, wire.Status, string) {
	if adm, ok := e.adm.Get(p); ok {
		return adm, wire.StatusOK, ""
	}
	if e.adm.IsBlocked(p) {
		return nil, wire.StatusUnauthorized, "peer blocked after failed admission"
	}
	adm, err := e.adm.Wait(ctx, p)
	if err != nil {
		return nil, wire.StatusUnauthorized, err.Error()
	}
	return adm, wire.StatusOK, ""
}

// serve answers one request body of reg's protocol from adm: the role
// check, the handler, and the reply (with this node's load for a node).
func (e *Endpoint) serve(ctx context.Context, reg *registered, adm *Admitted, body []byte) wire.ReplyParts {
	pid := reg.pid
	if reg.roles != nil && !slices.Contains(reg.roles, adm.Role()) {
		e.m.Refused.WithLabelValues(string(pid)).Inc()
		return errorReply(wire.StatusUnauthorized, fmt.Sprintf("role %s may not use %s", adm.Role(), pid))
	}
	e.m.countReceived(string(pid), string(adm.Role()))
	e.heard.mark(adm.Peer, e.cfg.Now())
	resp, err := reg.h(ctx, adm, body)
	if err != nil {
		e.m.RPCFailed.WithLabelValues(string(pid), "in").Inc()
		status := wire.StatusInternal
		var se *statusError
		if errors.As(err, &se) {
			status = se.status
		}
		return errorReply(status, err.Error())
	}
	// The body is encoded straight into the reply's frame (a body that
	// does not encode goes as StatusInternal, counted by the writer's
	// caller).
	rep := wire.ReplyParts{Status: wire.StatusOK}
	if resp != nil {
		rep.Body = resp
	}
	if report, _ := e.loadHooks(); report != nil && adm.Role() == certs.RoleNode {
		rep.Load = report()
	}
	return rep
}

func errorReply(status wire.Status, msg string) wire.ReplyParts {
	return wire.ReplyParts{Status: status, Msg: msg}
}

func writeReply(w io.Writer, status wire.Status, msg string, body any) error {
	return writeLoadedReply(w, status, msg, body, nil)
}

func writeLoadedReply(w io.Writer, status wire.Status, msg string, body any, load *wire.LoadInfo) error {
	bodyErr, err := wire.WriteReply(w, wire.ReplyParts{Status: status, Msg: msg, Body: body, Load: load})
	if err != nil {
		return err
	}
	return bodyErr
}

// Call sends req to p on protocol pid and decodes the reply body, of at
// most maxResp bytes, into resp (which may be nil). The callee must be
// admitted: a party never talks to an unproven peer. A non-OK reply is
// returned as a *wire.Error.
func (e *Endpoint) Call(ctx context.Context, p peer.ID, pid protocol.ID, req any, maxResp int, resp wire.Validator) error {
	err := e.call(ctx, p, pid, req, maxResp, resp)
	if err != nil {
		e.m.RPCFailed.WithLabelValues(string(pid), "out").Inc()
		return fmt.Errorf("%s to %s: %w", pid, p, err)
	}
	return nil
}

func (e *Endpoint) call(ctx context.Context, p peer.ID, pid protocol.ID, req any, maxResp int, resp wire.Validator) error {
	if p == e.raw.ID() {
		return errors.New("call to self")
	}
	if e.adm.IsBlocked(p) {
		return fmt.Errorf("peer blocked after failed admission: %w", ErrNotAdmitted)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.m.countSent(string(pid))
	if _, ok := e.adm.Get(p); !ok {
		// Dial (from the peerstore's addresses) and wait for the hello.
		if err := e.raw.Connect(ctx, peer.AddrInfo{ID: p}); err != nil {
			return err
		}
		if _, err := e.WaitAdmitted(ctx, p); err != nil {
			return err
		}
	}
	// The request is encoded into a pooled buffer: the frame writers copy
	// it, and nothing holds it once the call returns.
	buf := codec.AcquireBuffer()
	defer codec.ReleaseBuffer(buf)
	if err := codec.MarshalTo(buf, req); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	body := buf.Bytes()
	var rep *wire.Reply
	var err error
	if len(body) <= wire.MaxMuxRequest {
		rep, err = e.callMux(ctx, p, pid, body)
		if err == nil && len(rep.Body) > maxResp {
			return fmt.Errorf("reply body of %d bytes over the %d expected: %w", len(rep.Body), maxResp, wire.ErrFrameTooLarge)
		}
		if err != nil && ctx.Err() == nil && errors.Is(err, errMuxUnavailable) {
			rep, err = e.callStream(ctx, p, pid, body, maxResp)
		}
	} else {
		rep, err = e.callStream(ctx, p, pid, body, maxResp)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return fmt.Errorf("%w (%v)", cerr, err)
		}
		return err
	}
	if err := rep.Validate(); err != nil {
		return err
	}
	e.heard.mark(p, e.cfg.Now())
	if rep.Load != nil {
		if a, ok := e.adm.Get(p); ok && a.Role() == certs.RoleNode {
			if _, observe := e.loadHooks(); observe != nil {
				observe(p, rep.Load)
			}
		}
	}
	if rep.Status != wire.StatusOK {
		return &wire.Error{Status: rep.Status, Msg: rep.Msg}
	}
	if resp == nil {
		return nil
	}
	return wire.Decode(rep.Body, resp)
}

// callStream sends one request body of protocol pid to p on a stream of
// its own and reads the reply, of at most maxResp bytes.
func (e *Endpoint) callStream(ctx context.Context, p peer.ID, pid protocol.ID, body []byte, maxResp int) (*wire.Reply, error) {
	s, err := e.raw.NewStream(ctx, p, pid)
	if err != nil {
		return nil, err
	}
	// The context's end resets the stream, whatever the transport does
	// with deadlines (mocknet's streams ignore them); armed until after
	// the deferred Close, which can block too.
	defer context.AfterFunc(ctx, func() { _ = s.Reset() })()
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	if err := wire.WriteRawFrame(s, body); err != nil {
		s.Reset()
		return nil, err
	}
	_ = s.CloseWrite()
	var rep wire.Reply
	if err := wire.ReadFrame(bufio.NewReader(s), maxResp, &rep); err != nil {
		s.Reset()
		return nil, err
	}
	return &rep, nil
}

// Ping checks that p answers an RPC.
func (e *Endpoint) Ping(ctx context.Context, p peer.ID) error {
	return e.Call(ctx, p, wire.ProtoPing, &wire.Ping{}, 64, &wire.Ping{})
}
