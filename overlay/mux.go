package overlay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/up-pool/up/wire"
)

// muxInflight bounds the requests one ProtoMux stream has in its handlers
// at once; the stream is not read further until one ends.
const muxInflight = 64

// errMuxClosed ends the calls waiting on a mux stream that closed.
var errMuxClosed = errors.New("mux stream closed")

// errMuxUnavailable: the callee does not serve ProtoMux (an older
// version); the call takes a stream of its own.
var errMuxUnavailable = errors.New("callee does not serve " + wire.ProtoMux)

// muxConn is a caller's ProtoMux stream to one callee: requests are
// written one at a time (wsem); one goroutine reads the replies and hands each to the
// call waiting for its ID.
type muxConn struct {
	s    network.Stream
	wsem chan struct{} // held while a request is written; a call waits for it only while its context lasts
	bw   *bufio.Writer

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan *wire.Reply
	err     error // set once the stream failed; no call is registered after
}

// muxTo returns the open mux stream to p, opening one when there is none
// or the one it has is on a closed connection.
func (e *Endpoint) muxTo(ctx context.Context, p peer.ID) (*muxConn, error) {
	e.muxMu.Lock()
	mc := e.muxes[p]
	e.muxMu.Unlock()
	if mc != nil && !mc.s.Conn().IsClosed() {
		return mc, nil
	}
	if mc != nil {
		// Its connection closed without the stream being reset (a
		// stream opened as the connection went down): the callee behind
		// it is gone, and a restarted callee is reached on a new one.
		e.dropMux(p, mc, errMuxClosed)
	}
	s, err := e.raw.NewStream(ctx, p, wire.ProtoMux)
	if err != nil {
		if errors.Is(err, msmux.ErrNotSupported[protocol.ID]{}) {
			return nil, fmt.Errorf("%w: %v", errMuxUnavailable, err)
		}
		return nil, err
	}
	mc = &muxConn{s: s, wsem: make(chan struct{}, 1), bw: bufio.NewWriter(s), pending: map[uint64]chan *wire.Reply{}}
	e.muxMu.Lock()
	if e.ctx.Err() != nil {
		e.muxMu.Unlock()
		_ = s.Reset()
		return nil, e.ctx.Err()
	}
	if other := e.muxes[p]; other != nil { // another call opened one meanwhile
		e.muxMu.Unlock()
		_ = s.Reset()
		return other, nil
	}
	if e.muxes == nil {
		e.muxes = map[peer.ID]*muxConn{}
	}
	e.muxes[p] = mc
	e.muxMu.Unlock()
	go e.readReplies(p, mc)
	return mc, nil
}

// readReplies hands each reply on mc to its call until the stream ends,
// then fails the calls still waiting and forgets mc.
func (e *Endpoint) readReplies(p peer.ID, mc *muxConn) {
	r := bufio.NewReader(mc.s)
	var err error
	for {
		var rep wire.MuxReply
		var frame []byte
		if frame, err = wire.ReadRawFrame(r, wire.MaxFrame); err != nil {
			break
		}
		if err = wire.DecodeMuxReply(frame, &rep); err != nil {
			break
		}
		mc.mu.Lock()
		ch := mc.pending[rep.ID]
		delete(mc.pending, rep.ID)
		mc.mu.Unlock()
		if ch != nil {
			ch <- &rep.Reply
		}
	}
	if errors.Is(err, io.EOF) {
		err = errMuxClosed
	}
	e.dropMux(p, mc, err)
}

// dropMux marks mc failed with err, resets its stream, fails its waiting
// calls and forgets it, unless a newer stream to p replaced it.
func (e *Endpoint) dropMux(p peer.ID, mc *muxConn, err error) {
	// Forget it first: a call that sees its waiters fail and calls again
	// must open a new stream, not find this one.
	e.muxMu.Lock()
	if e.muxes[p] == mc {
		delete(e.muxes, p)
	}
	e.muxMu.Unlock()
	mc.mu.Lock()
	if mc.err == nil {
		mc.err = err
	}
	pending := mc.pending
	mc.pending = map[uint64]chan *wire.Reply{}
	mc.mu.Unlock()
	_ = mc.s.Reset()
	for _, ch := range pending {
		close(ch)
	}
}

// closeMuxes resets every open mux stream (Endpoint.Close).
func (e *Endpoint) closeMuxes() {
	e.muxMu.Lock()
	all := e.muxes
	e.muxes = nil
	e.muxMu.Unlock()
	for p, mc := range all {
		e.dropMux(p, mc, errMuxClosed)
	}
}

// callMux sends one request body of protocol pid to p on the mux stream
// and waits for its reply until ctx ends.
func (e *Endpoint) callMux(ctx context.Context, p peer.ID, pid protocol.ID, body []byte) (*wire.Reply, error) {
	mc, err := e.muxTo(ctx, p)
	if err != nil {
		return nil, err
	}
	ch := make(chan *wire.Reply, 1)
	mc.mu.Lock()
	if mc.err != nil {
		mc.mu.Unlock()
		return nil, mc.err
	}
	mc.next++
	id := mc.next
	mc.pending[id] = ch
	mc.mu.Unlock()
	forget := func() {
		mc.mu.Lock()
		delete(mc.pending, id)
		mc.mu.Unlock()
	}

	select {
	case mc.wsem <- struct{}{}:
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = mc.s.SetWriteDeadline(dl)
	}
	err = wire.WriteMuxRequest(mc.bw, id, string(pid), body)
	if err == nil {
		err = mc.bw.Flush()
	}
	_ = mc.s.SetWriteDeadline(time.Time{})
	<-mc.wsem
	if err != nil {
		// A frame cut short leaves the stream unusable for every call.
		forget()
		e.dropMux(p, mc, err)
		return nil, err
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			mc.mu.Lock()
			err := mc.err
			mc.mu.Unlock()
			return nil, err
		}
		return rep, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// handleMux serves a caller's ProtoMux stream: each request runs its
// protocol's handler, as a stream of its own would, at most muxInflight
// at once, and the replies go back as they are ready.
func (e *Endpoint) handleMux(s network.Stream) {
	p := s.Conn().RemotePeer()
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HelloTimeout)
	adm, _, _ := e.admit(ctx, p)
	cancel()
	if adm == nil {
		e.m.Refused.WithLabelValues(wire.ProtoMux).Inc()
		_ = s.Reset()
		return
	}
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		_ = s.Close()
	}()
	var wmu sync.Mutex
	bw := bufio.NewWriter(s)
	sem := make(chan struct{}, muxInflight)
	r := bufio.NewReader(s)
	for {
		var req wire.MuxRequest
		frame, err := wire.ReadRawFrame(r, wire.MaxMuxRequestFrame)
		if err == nil {
			err = wire.DecodeMuxRequest(frame, &req)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				e.m.RPCFailed.WithLabelValues(wire.ProtoMux, "in").Inc()
				_ = s.Reset()
			}
			return
		}
		sem <- struct{}{}
		wg.Add(1)
		e.workers.run(func() {
			defer func() {
				<-sem
				wg.Done()
			}()
			rep := e.serveMuxed(p, &req)
			frame, bodyErr := wire.EncodeMuxReply(req.ID, rep) // outside the lock: the others' replies wait only for writes
			wmu.Lock()
			// A caller that stops reading must not hold the handlers.
			_ = s.SetWriteDeadline(time.Now().Add(e.cfg.HelloTimeout))
			err := frame.Write(bw)
			if err == nil {
				err = bw.Flush()
			}
			wmu.Unlock()
			frame.Release()
			if bodyErr != nil {
				e.m.RPCFailed.WithLabelValues(req.Proto, "in").Inc()
			}
			if err != nil {
				_ = s.Reset()
			}
		})
	}
}

// serveMuxed answers one multiplexed request: the peer must still be
// admitted (it may have been dropped since the stream opened), and the
// protocol served and its request within the protocol's bound.
func (e *Endpoint) serveMuxed(p peer.ID, req *wire.MuxRequest) wire.ReplyParts {
	pid := protocol.ID(req.Proto)
	e.hmu.Lock()
	reg := e.handlers[pid]
	e.hmu.Unlock()
	if reg == nil {
		e.m.RPCFailed.WithLabelValues(wire.ProtoMux, "in").Inc()
		return errorReply(wire.StatusNotFound, fmt.Sprintf("protocol %s not served", pid))
	}
	adm, ok := e.adm.Get(p)
	if !ok {
		e.m.Refused.WithLabelValues(string(pid)).Inc()
		return errorReply(wire.StatusUnauthorized, "peer no longer admitted")
	}
	if len(req.Body) > reg.maxReq {
		e.m.RPCFailed.WithLabelValues(string(pid), "in").Inc()
		return errorReply(wire.StatusBadRequest, fmt.Errorf("request of %d bytes over the %d of %s: %w", len(req.Body), reg.maxReq, pid, wire.ErrFrameTooLarge).Error())
	}
	ctx := newReqCtx(e.ctx, time.Now().Add(e.cfg.HelloTimeout))
	defer ctx.release()
	return e.serve(ctx, reg, adm, req.Body)
}
