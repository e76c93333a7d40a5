package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

const resultNS = "result"

func (p *Pool) registerResultProtocols() {
	p.ep.Handle(wire.ProtoResult, wire.MaxResultsFrame, []certs.Role{certs.RoleClient}, p.handleResult)
	p.ep.Handle(wire.ProtoResultMany, wire.MaxResultsFrame, []certs.Role{certs.RoleClient}, p.handleResultMany)
	p.ep.Handle(wire.ProtoResultManyShared, wire.MaxResultsFrame, []certs.Role{certs.RoleClient}, p.handleResultManyShared)
	p.ep.Handle(wire.ProtoResultGet, 64<<10, []certs.Role{certs.RoleProject, certs.RoleNode}, p.handleResultGet)
	p.ep.Handle(wire.ProtoCollect, 1<<20, []certs.Role{certs.RoleProject}, p.handleCollect)
}

// Result returns a held job's result envelope, if this node has it.
func (p *Pool) Result(key []byte) ([]byte, bool) {
	b, err := p.st.Get(store.Key(resultNS, key))
	return b, err == nil
}

// handleResult accepts a client's sealed result for a job it claimed.
func (p *Pool) handleResult(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ResultSubmit
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	in := resultIn{cert: from.Identity.Cert.Raw, env: req.Envelope, at: req.At, sent: req.Sent}
	if len(req.Accepts) > 0 {
		in.from, in.start, in.accepts = from, req.Start, req.Accepts
	}
	if err := p.submitResult(in); err != nil {
		return nil, err
	}
	return &wire.Ping{}, nil
}

// resultIn is a result as a client submits it: its certificate (DER),
// the sealed envelope, its time, the nodes it says it sends it to, and,
// when it carries the claim's certificate (wire.ResultSubmit), the sender
// with the claim's start and acceptances.
type resultIn struct {
	cert, env []byte
	at        int64
	sent      [][]byte
	from      *overlay.Admitted
	start     int64
	accepts   [][]byte
}

// SubmitResult stores a result from the client whose certificate (DER)
// is clientCert and marks the job finished, with the certificate as the
// finished state's proof (job.Proof.Cert: other nodes check the envelope
// against it). It refuses a result in another client's name, a forged
// envelope, and a job the client has not claimed.
func (p *Pool) SubmitResult(clientCert []byte, envBytes []byte, at int64) error {
	return p.SubmitResultSent(clientCert, envBytes, at, nil)
}

// SubmitResultSent is SubmitResult for a result the client says it sends
// to the nodes sent too (ResultSubmit.Sent): it is handed on only to the
// job's closest nodes not among them (passOnResult).
func (p *Pool) SubmitResultSent(clientCert []byte, envBytes []byte, at int64, sent [][]byte) error {
	return p.submitResult(resultIn{cert: clientCert, env: envBytes, at: at, sent: sent})
}

// submitResult stores a submitted result (SubmitResultSent); a result
// carrying its claim's certificate makes a node that does not hold the
// claim learn it first (learnClaim).
func (p *Pool) submitResult(in resultIn) error {
	clientCert, envBytes, at, sent := in.cert, in.env, in.at, in.sent
	id, err := p.ep.Admission().Verifier().VerifyCert(clientCert, p.env.Now(), certs.RoleClient)
	if err != nil {
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("result: client certificate: %w", err))
	}
	client := []byte(id.PublicKey)
	env, err := result.Decode(envBytes)
	if err != nil {
		return overlay.StatusErr(wire.StatusBadRequest, err)
	}
	if !bytes.Equal(env.Client, client) {
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("result of job %x names another client than its sender", env.Job))
	}
	verify := sigverify.Verify
	if len(env.Path) > 0 {
		verify = p.sigs.Verify // a batch's root: once for all its results
	}
	if err := env.VerifyOuterWith(verify); err != nil {
		return overlay.StatusErr(wire.StatusUnauthorized, err)
	}
	now := p.nowMS()
	// The client dates its result on its own clock: within T_skew ahead
	// of this one (any two clocks of the model are), as a claim's start.
	if at < now-3600_000 || at > now+p.cfg.TSkew.Milliseconds() {
		return overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("result time %d is %d ms from now", at, at-now))
	}
	st, ok := p.State(env.Job)
	if !ok {
		return overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x not held here", env.Job))
	}
	if (st.Phase != job.Claimed || !bytes.Equal(st.Client, client)) && len(in.accepts) > 0 && in.from != nil {
		if st, err = p.learnClaim(in.from, env.Job, client, in.start, in.accepts); err != nil {
			return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("result: %w", err))
		}
	}
	digest := env.Digest()
	switch {
	case st.Phase == job.Finished && bytes.Equal(st.Client, client) && bytes.Equal(st.Result, digest):
		if _, has := p.Result(env.Job); has {
			return nil // delivered before
		}
	case st.Phase != job.Claimed || !bytes.Equal(st.Client, client):
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("job %x is %s, not claimed by this client", env.Job, st.Phase))
	}
	// The envelope goes to disk in the finished state's batch, or alone
	// when the state was finished with this result before (storeWrite).
	envelope := &storeWrite{key: store.Key(resultNS, env.Job), value: envBytes}
	proof := (&job.Proof{Cert: clientCert}).Encode()
	_, merged, err := p.applyWith(env.Job, job.State{Phase: job.Finished, Client: client, At: at, Result: digest}, proof, envelope)
	if err != nil {
		return err
	}
	if !job.Equal(merged, st) {
		p.passOnResult(env.Job, sent)
	}
	return nil
}

// learnClaim merges the claim (client, start) of job key with its
// certificate, the acceptances a result carried, as a certify would
// (claimnet's handleCertify): checked, and kept as evidence against from
// when forged. It returns the job's state as this node then judges it.
func (p *Pool) learnClaim(from *overlay.Admitted, key, client []byte, start int64, accepts [][]byte) (job.State, error) {
	h, ok := p.Lookup(key)
	if !ok {
		return job.State{}, ErrUnknownJob
	}
	st := job.State{Phase: job.Claimed, Client: client, Start: start, Deadline: start + h.TFinish}
	proof := (&job.Proof{Claim: claim.EncodeCertificate(accepts)}).Encode()
	return p.MergeFrom(from, wire.ProtoResult, key, st, proof)
}

// passOnResult hands a result just stored here on, in the background, to
// where this node's next republish round would send the job's state,
// without waiting for that round: the client sent the result only to the
// claim's nodes, and the job's closest nodes may have changed since the
// claim (nodes joined nearer the job, or replaced claim nodes that died).
// Should the claim's nodes that hold the result die before their next
// rounds, the finished state would go with them, and the job would run
// again once the claim lapsed at T_finish.
//
// As RepublishRound plans it, from this node's view of the job's r
// closest live nodes: the closest syncs the finished state to the others
// of the r, another of the r syncs it to the closest, and a node no
// longer among them (the job moved on since the claim) syncs it to all r.
// A sync is one state; a target without the result fetches it from this
// node (handleSync), and one that lacked the job gets it stored and is
// synced once more, for the result. A target that fails is marked dead
// and the plan made again from the new view.
//
// Nodes the client sent the result to itself (sent) are left out: it
// reaches them without a sync, and each hands it on in turn only to those
// the client did not name. When the claim's nodes are still the job's r
// closest — the common case — no sync is sent at all (issue 23: these
// were 7.8 of the 41 RPCs of a job in up bench). A client that names a
// node it skipped delays only its own result: that node gets the
// finished state at a republish round.
func (p *Pool) passOnResult(key []byte, sent [][]byte) {
	skip := make(map[peer.ID]bool, len(sent))
	for _, id := range sent {
		skip[peer.ID(id)] = true
	}
	if p.nothingToPassOn(key, skip) {
		return
	}
	p.inflight.Go(func() { p.syncNow(p.ctx, key, skip) })
}

// nothingToPassOn reports, from this node's routing table alone
// (liveLocal: the nodes not marked dead, no RPC), that every node
// syncNow would sync the job's state to got the result from the client
// (skip) — the common case, decided without a goroutine and the liveness
// checks of NearestLive (a goroutine per result and replica cost ~30
// µs per job in up bench). Should a node of that view be dead and not yet
// marked so, its replacement gets the finished state at its next
// republish round, as a node a client skipped does.
func (p *Pool) nothingToPassOn(key []byte, skip map[peer.ID]bool) bool {
	self := p.self()
	for _, t := range replica.PassOnTargets(self, p.liveLocal(p.posOf(key), p.r)) {
		if t != self && !skip[t] {
			return false
		}
	}
	return true
}

// syncNow syncs one job's state to the nodes a republish round of this
// node would sync it to (passOnResult), and to all of the job's r closest
// when this node is not among them, but not to those in skip.
func (p *Pool) syncNow(ctx context.Context, key []byte, skip map[peer.ID]bool) {
	self := p.self()
	tried := map[peer.ID]bool{self: true}
	for t := range skip {
		tried[t] = true
	}
	for attempt := 0; attempt < replica.SyncAttempts; attempt++ {
		if _, ok := p.stored(key); !ok {
			return
		}
		failed := false
		for _, t := range replica.PassOnTargets(self, p.dht.NearestLive(ctx, p.posOf(key), p.r)) {
			if tried[t] {
				continue
			}
			tried[t] = true
			it, ok := p.storedItem(key)
			if !ok {
				return
			}
			items := []wire.SyncItem{it}
			var rs RoundStats
			p.passedOn.Add(1)
			if err := p.syncWith(ctx, t, items, &rs); err != nil {
				p.dht.MarkDead(t)
				failed = true
				continue
			}
			if rs.Repaired > 0 {
				// Stored there just now, without the result: a second
				// sync makes it fetch the result.
				_ = p.syncWith(ctx, t, items, &rs)
			}
		}
		if !failed || ctx.Err() != nil {
			return
		}
	}
}

// PassedOn counts the syncs this node sent to hand results on
// (passOnResult) since it started.
func (p *Pool) PassedOn() int64 { return p.passedOn.Load() }

// handleResultGet returns results and states of held jobs.
func (p *Pool) handleResultGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.ResultGetRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp := &wire.ResultGetResponse{Results: make([][]byte, len(req.Keys))}
	size := 0
	for i, k := range req.Keys {
		if st, it, ok := p.viewItem(k); ok {
			if !job.Equal(it.State, st) {
				continue // a claim lapsed here, or one this node cannot prove
			}
			resp.States = append(resp.States, it)
		}
		if b, ok := p.Result(k); ok && size+len(b) < wire.MaxResultsFrame-(1<<20) {
			resp.Results[i] = b
			size += len(b)
		}
	}
	return resp, nil
}

// handleCollect marks a project's finished jobs collected, each with the
// project's signature as its proof.
func (p *Pool) handleCollect(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.CollectRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	src := &source{name: from.Identity.Name, peer: from.Peer, proto: wire.ProtoCollect}
	resp := &wire.CollectResponse{Results: make([]wire.StoreResult, len(req.Keys))}
	for i, k := range req.Keys {
		resp.Results[i] = p.collect(k, src, req.At, req.Proofs[i])
	}
	return resp, nil
}

// collect marks job key collected at at, with proof (job.Proof, encoded)
// checked first, from the project src.
func (p *Pool) collect(key []byte, src *source, at int64, proof []byte) wire.StoreResult {
	h, ok := p.Lookup(key)
	switch {
	case !ok:
		return wire.StoreResult{Status: wire.StatusNotFound, Msg: "job not held"}
	case h.Project != src.name:
		return wire.StoreResult{Status: wire.StatusUnauthorized, Msg: fmt.Sprintf("job of project %q", h.Project)}
	case h.State.Phase != job.Finished && h.State.Phase != job.Collected:
		return wire.StoreResult{Status: wire.StatusBadRequest, Msg: "job is " + h.State.Phase.String()}
	}
	if _, _, err := p.applyFrom(key, job.State{Phase: job.Collected, At: at}, proof, nil, src); err != nil {
		status := wire.StatusInternal
		if errors.Is(err, job.ErrForgedProof) || errors.Is(err, job.ErrNoProof) {
			status = wire.StatusUnauthorized
		}
		return wire.StoreResult{Status: status, Msg: err.Error()}
	}
	return wire.StoreResult{Status: wire.StatusOK}
}

// fetchResults gets, from the node src, the result envelopes of finished
// states this node lacks: those of items not merged yet for want of the
// envelope (merged now if it proves them), and those of finished jobs held
// here without their result (a replica that lost it). tr, if not nil,
// counts the bytes. It returns the keys whose state changed here.
func (p *Pool) fetchResults(ctx context.Context, src *source, items []wire.SyncItem, tr *traffic) [][]byte {
	var changed [][]byte
	for start := 0; start < len(items); start += wire.MaxJobsPerStore {
		part := items[start:min(start+wire.MaxJobsPerStore, len(items))]
		req := &wire.ResultGetRequest{}
		for _, it := range part {
			req.Keys = append(req.Keys, it.Key)
		}
		var resp wire.ResultGetResponse
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RPCTimeout)
		err := p.call(cctx, src.peer, wire.ProtoResultGet, req, wire.MaxResultsFrame, &resp, tr)
		cancel()
		if err != nil {
			return changed
		}
		for i, b := range resp.Results {
			if len(b) == 0 || i >= len(part) {
				continue
			}
			key := part[i].Key
			if st, ok := p.State(key); ok && st.Phase == job.Finished && p.heldEnvelope(key, st.Result) == nil {
				if env, err := result.Decode(b); err == nil && env.VerifyOuter() == nil &&
					bytes.Equal(env.Job, key) && bytes.Equal(st.Result, env.Digest()) {
					_ = p.st.Put(store.Key(resultNS, key), b)
					continue
				}
			}
			before, _ := p.stored(key)
			if merged, _, err := p.applyFrom(key, part[i].State, part[i].Proof, b, src); err == nil && !job.Equal(before, merged) {
				changed = append(changed, key)
			}
		}
	}
	return changed
}

// missingResults lists, of the given keys, the finished jobs held here
// without their result, as sync items of the state held.
func (p *Pool) missingResults(keys [][]byte) []wire.SyncItem {
	var out []wire.SyncItem
	for _, k := range keys {
		if it, ok := p.storedItem(k); ok && it.State.Phase == job.Finished {
			if _, has := p.Result(k); !has {
				out = append(out, it)
			}
		}
	}
	return out
}
