package testnet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// forgesPerRound bounds the jobs a forging node forges per round.
const forgesPerRound = 4

// replication is the network's r.
func (n *Network) replication() int {
	if n.opts.DHT.Replication > 0 {
		return n.opts.DHT.Replication
	}
	return 5
}

// every calls f(round) every adversary interval until node i is no longer
// nd (killed, restarted or the network closed).
func (n *Network) every(i int, nd *node.Node, f func(round int)) {
	tick := time.NewTicker(n.adv.interval)
	defer tick.Stop()
	for round := 0; ; round++ {
		<-tick.C
		if n.Node(i) != nd {
			return
		}
		f(round)
	}
}

// syncTo sends items to node to over job/sync, as a replica's republish
// would.
func syncTo(nd *node.Node, to peer.ID, items []wire.SyncItem) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var resp wire.SyncResponse
	return nd.Endpoint().Call(ctx, to, wire.ProtoJobSync, &wire.SyncRequest{Items: items}, wire.MaxJobFrame, &resp)
}

// denyClaims makes nd deny every claim, signed properly, and refuse every
// confirm.
func denyClaims(nd *node.Node, now func() time.Time) {
	id, ep := nd.Identity(), nd.Endpoint()
	clients := []certs.Role{certs.RoleClient}
	ep.Handle(wire.ProtoClaim, 1024, clients, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ClaimRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		signed, err := claim.Sign(claim.Statement{Kind: claim.Denied, Job: req.Job, Client: []byte(from.Identity.PublicKey),
			Node: []byte(ep.ID()), At: now().UnixMilli()}, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
		if err != nil {
			return nil, err
		}
		return &wire.ClaimResponse{Reply: signed}, nil
	})
	ep.Handle(wire.ProtoConfirm, 1<<20, clients, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, errors.New("denied"))
	})
	// The same for several jobs at once: every job denied, every confirm
	// refused.
	answerManyAs(nd, now, claim.Denied, nil)
	handleManyBoth(ep, wire.ProtoConfirmMany, wire.MaxClaimManyBytes, clients, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.ConfirmManyRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		resp := &wire.ConfirmManyResponse{Accepts: make([][]byte, len(req.Items)), Refused: make([]string, len(req.Items))}
		for i := range resp.Refused {
			resp.Refused[i] = "denied"
		}
		return resp, nil
	})
}

// dropStores makes nd acknowledge every stored job and keep none; a
// project's store is acknowledged as held by r replicas.
func dropStores(nd *node.Node, r int) {
	if r == 0 {
		r = 5
	}
	roles := []certs.Role{certs.RoleProject, certs.RoleNode}
	nd.Endpoint().Handle(wire.ProtoJobStore, wire.MaxJobFrame, roles, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.StoreRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		resp := &wire.StoreResponse{Results: make([]wire.StoreResult, len(req.Jobs))}
		for i := range resp.Results {
			resp.Results[i].Status = wire.StatusOK
			if req.Replicate {
				resp.Results[i].Acks = uint16(r)
			}
		}
		return resp, nil
	})
}

// withholdResults makes nd answer result/get with no result.
func withholdResults(nd *node.Node) {
	roles := []certs.Role{certs.RoleProject, certs.RoleNode}
	nd.Endpoint().Handle(wire.ProtoResultGet, 64<<10, roles, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.ResultGetRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		return &wire.ResultGetResponse{Results: make([][]byte, len(req.Keys))}, nil
	})
}

// forgeries are the states a forge-states node sends, none with a proof:
// a claim by a made-up client, a result no client made, a collection the
// project never signed, and a tombstone ending a claim that never was.
func forgeries(at int64) []job.State {
	client := bytes.Repeat([]byte{0xf0}, 32)
	return []job.State{
		{Phase: job.Claimed, Client: client, Start: at, Deadline: at + int64(time.Hour/time.Millisecond)},
		{Phase: job.Finished, Client: client, At: at, Result: bytes.Repeat([]byte{0xf1}, 32)},
		{Phase: job.Collected, At: at},
		{Phase: job.Ready, Client: client, Start: at},
	}
}

// forgeLoop sends node i's forgeries until node i is killed.
func (n *Network) forgeLoop(i int, nd *node.Node, now func() time.Time) {
	n.every(i, nd, func(round int) {
		keys := nd.Pool().Keys()
		for k := range min(forgesPerRound, len(keys)) {
			key := keys[(round*forgesPerRound+k)%len(keys)]
			st := forgeries(now().UnixMilli())[(round+k)%4]
			for _, to := range n.JobClosest(key, n.replication()) {
				if to != nd.ID() {
					_ = syncTo(nd, to, []wire.SyncItem{{Key: key, State: st}})
				}
			}
		}
	})
}

// forgeGrants makes nd's claim service grant every claim and accept every
// confirm, whatever its temporary claims and whether it holds the job:
// each reply signed properly with nd's own keys, as an honest node's.
func forgeGrants(nd *node.Node, now func() time.Time, a *adversary) {
	id, ep := nd.Identity(), nd.Endpoint()
	sign := func(st claim.Statement) ([]byte, error) {
		return claim.Sign(st, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
	}
	clients := []certs.Role{certs.RoleClient}
	ep.Handle(wire.ProtoClaim, 1024, clients, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ClaimRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		b, err := sign(claim.Statement{Kind: claim.Granted, Job: req.Job, Client: []byte(from.Identity.PublicKey),
			Node: []byte(ep.ID()), At: now().UnixMilli()})
		if err != nil {
			return nil, err
		}
		a.add(BehaviourForgeGrants+"/granted", 1)
		return &wire.ClaimResponse{Reply: b}, nil
	})
	ep.Handle(wire.ProtoConfirm, 1<<20, clients, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ConfirmRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		b, err := sign(claim.Statement{Kind: claim.Accepted, Job: req.Job, Client: []byte(from.Identity.PublicKey),
			Node: []byte(ep.ID()), At: now().UnixMilli(), Start: req.Start})
		if err != nil {
			return nil, err
		}
		a.add(BehaviourForgeGrants+"/accepted", 1)
		return &wire.ConfirmResponse{Accept: b}, nil
	})
	forgeGrantsMany(nd, now, a)
}

// answerManyAs makes nd answer every job of every many-job claim with a
// statement of kind, signed properly as one batch; counted (nil: none)
// is told how many.
func answerManyAs(nd *node.Node, now func() time.Time, kind claim.Kind, counted func(n int)) {
	id, ep := nd.Identity(), nd.Endpoint()
	handleManyBoth(ep, wire.ProtoClaimMany, 256<<10, []certs.Role{certs.RoleClient}, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ClaimManyRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		sts := make([]claim.Statement, len(req.Jobs))
		for i, k := range req.Jobs {
			sts[i] = claim.Statement{Kind: kind, Job: k, Client: []byte(from.Identity.PublicKey), Node: []byte(ep.ID()), At: now().UnixMilli()}
		}
		replies, err := claim.SignBatch(sts, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
		if err != nil {
			return nil, err
		}
		if counted != nil {
			counted(len(replies))
		}
		return &wire.ClaimManyResponse{Replies: replies}, nil
	})
}

// forgeGrantsMany is forgeGrants for several jobs at once: every job
// granted, every confirm accepted, under one signature each request.
func forgeGrantsMany(nd *node.Node, now func() time.Time, a *adversary) {
	id, ep := nd.Identity(), nd.Endpoint()
	answerManyAs(nd, now, claim.Granted, func(n int) { a.add(BehaviourForgeGrants+"/granted", n) })
	handleManyBoth(ep, wire.ProtoConfirmMany, wire.MaxClaimManyBytes, []certs.Role{certs.RoleClient}, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ConfirmManyRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		sts := make([]claim.Statement, len(req.Items))
		for i, it := range req.Items {
			sts[i] = claim.Statement{Kind: claim.Accepted, Job: it.Job, Client: []byte(from.Identity.PublicKey), Node: []byte(ep.ID()),
				At: now().UnixMilli(), Start: it.Start}
		}
		accepts, err := claim.SignBatch(sts, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
		if err != nil {
			return nil, err
		}
		a.add(BehaviourForgeGrants+"/accepted", len(accepts))
		return &wire.ConfirmManyResponse{Accepts: accepts, Refused: make([]string, len(accepts))}, nil
	})
}

// Ways a forge-grants node forges the acceptances of its certificates.
const (
	forgeOwnKeys   = iota // in the other replicas' names, under its own keys
	forgeMadeUpCA         // under made-up keys, certified by a made-up CA
	forgeMadeUpIDs        // by made-up peers, positions signed by its own account
	forgeWays
)

// forgedCertificate is a claimed state of job key (T_finish tFinish ms)
// by a made-up client, with a certificate of nd's own real acceptance and
// acceptances forged one of the ways (forgeOwnKeys...) in the names of
// others, the job's replicas (the other closest nodes) or made-up peers.
func forgedCertificate(nd *node.Node, key []byte, tFinish int64, others []peer.ID, way int, fakeCA *certs.Authority,
	now time.Time) (job.State, []byte, error) {
	id := nd.Identity()
	client := make([]byte, ed25519.PublicKeySize)
	_, _ = rand.Read(client)
	start := now.UnixMilli()
	st := job.State{Phase: job.Claimed, Client: client, Start: start, Deadline: start + tFinish}
	stmt := claim.Statement{Kind: claim.Accepted, Job: key, Client: client, Node: []byte(nd.ID()), At: start, Start: start}
	own, err := claim.Sign(stmt, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
	if err != nil {
		return st, nil, err
	}
	accepts := [][]byte{own}
	for _, p := range others {
		stmt.Node = []byte(p)
		var b []byte
		switch way {
		case forgeOwnKeys:
			b, err = claim.Sign(stmt, id.Cert.Raw, id.Position.Marshal(), id.PeerKey.Sign)
		case forgeMadeUpCA:
			b, err = madeUpCASigned(stmt, p, fakeCA, now)
		case forgeMadeUpIDs:
			b, err = madeUpPeerSigned(stmt, id.Key, id.Cert.Raw, now)
		}
		if err != nil {
			return st, nil, err
		}
		accepts = append(accepts, b)
	}
	return st, (&job.Proof{Claim: claim.EncodeCertificate(accepts)}).Encode(), nil
}

// madeUpCASigned signs stmt in the name of peer p with a made-up account
// key certified by fakeCA and a made-up peer key.
func madeUpCASigned(stmt claim.Statement, p peer.ID, fakeCA *certs.Authority, now time.Time) ([]byte, error) {
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	c, err := fakeCA.Issue(certs.IssueRequest{PublicKey: pub, Role: certs.RoleNode, Name: "forged-" + p.ShortString()[2:10],
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)})
	if err != nil {
		return nil, err
	}
	peerKey, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	pos := certs.SignPosition(key, certs.Position{PeerID: []byte(p), Seq: 1, IssuedAt: now})
	return claim.Sign(stmt, c.Raw, pos.Marshal(), peerKey.Sign)
}

// madeUpPeerSigned renames stmt to a made-up peer whose key the forger
// holds and whose position record its own account signs: bound, as far as
// signatures go, to the peer it names.
func madeUpPeerSigned(stmt claim.Statement, account ed25519.PrivateKey, cert []byte, now time.Time) ([]byte, error) {
	peerKey, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	pid, err := peer.IDFromPrivateKey(peerKey)
	if err != nil {
		return nil, err
	}
	stmt.Node = []byte(pid)
	pos := certs.SignPosition(account, certs.Position{PeerID: []byte(pid), Seq: 1, IssuedAt: now})
	return claim.Sign(stmt, cert, pos.Marshal(), peerKey.Sign)
}

// forgeCertLoop sends, every interval, forged certificates of made-up
// clients' claims on the jobs node i holds (ready or claimed ones, where
// a claim would change a replica) to each job's other replicas.
func (n *Network) forgeCertLoop(i int, nd *node.Node, now func() time.Time) {
	fakeCA, err := certs.NewAuthority("forged CA", now().Add(-time.Hour), 24*time.Hour, nil)
	if err != nil {
		return
	}
	r := n.replication()
	n.every(i, nd, func(round int) {
		forged := 0
		for k, key := range nd.Pool().Keys() {
			h, ok := nd.Pool().Lookup(key)
			if !ok || forged == forgesPerRound || h.State.Phase != job.Ready && h.State.Phase != job.Claimed {
				continue
			}
			forged++
			var others []peer.ID
			for _, p := range n.JobClosest(key, r) {
				if p != nd.ID() {
					others = append(others, p)
				}
			}
			st, proof, err := forgedCertificate(nd, key, h.TFinish, others, (round+k)%forgeWays, fakeCA, now())
			if err != nil {
				continue
			}
			for _, to := range others {
				if syncTo(nd, to, []wire.SyncItem{{Key: key, State: st, Proof: proof}}) == nil {
					n.adv.add(BehaviourForgeGrants+"/sent", 1)
				}
			}
		}
	})
}

// alteredEnvelope returns the result envelope b with bytes of its sealed
// box flipped, its structure (job, client, outer signature) kept; the
// same bytes every time, so its digest is stable.
func alteredEnvelope(b []byte) ([]byte, bool) {
	env, err := result.Decode(b)
	if err != nil {
		return nil, false
	}
	sealed := bytes.Clone(env.Sealed)
	for j := len(sealed) / 2; j < len(sealed) && j < len(sealed)/2+8; j++ {
		sealed[j] ^= 0xff
	}
	env.Sealed = sealed
	return env.Encode(), true
}

// alterResults makes nd answer result/get with every held result
// altered, and the states held as an honest node would.
func alterResults(nd *node.Node, a *adversary) {
	roles := []certs.Role{certs.RoleProject, certs.RoleNode}
	nd.Endpoint().Handle(wire.ProtoResultGet, 64<<10, roles, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.ResultGetRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		resp := &wire.ResultGetResponse{Results: make([][]byte, len(req.Keys))}
		for i, k := range req.Keys {
			if env, err := nd.Pool().Envelope(k); err == nil && (len(env.Proof) > 0 || !job.NeedsProof(env.State)) {
				resp.States = append(resp.States, wire.SyncItem{Key: k, State: env.State, Proof: env.Proof})
			}
			if b, ok := nd.Pool().Result(k); ok {
				if alt, ok := alteredEnvelope(b); ok {
					resp.Results[i] = alt
					a.add(BehaviourAlter+"/served", 1)
				}
			}
		}
		return resp, nil
	})
}

// alterLoop sends, every interval and at once when node i stores a
// result, for finished jobs node i holds the result of, a finished state
// naming the altered envelope — earlier than the true one, so it would win
// the merge — to the job's other replicas, with the true state's proof
// (the client's certificate). A receiver fetches the envelope from node i
// (altered) before it merges.
func (n *Network) alterLoop(i int, nd *node.Node) {
	nd.Pool().OnChange(func(key []byte, st job.State, deleted bool) {
		if !deleted && st.Phase == job.Finished {
			key := bytes.Clone(key)
			go n.sendAltered(nd, key)
		}
	})
	n.every(i, nd, func(int) {
		forged := 0
		for _, key := range nd.Pool().Keys() {
			if forged < forgesPerRound && n.sendAltered(nd, key) {
				forged++
			}
		}
	})
}

// sendAltered sends the forged finished state of job key, if nd holds it
// finished with its result, to the job's other replicas; it reports
// whether it did.
func (n *Network) sendAltered(nd *node.Node, key []byte) bool {
	env, err := nd.Pool().Envelope(key)
	b, ok := nd.Pool().Result(key)
	if err != nil || !ok || env.State.Phase != job.Finished {
		return false
	}
	alt, ok := alteredEnvelope(b)
	if !ok {
		return false
	}
	ae, _ := result.Decode(alt)
	st := env.State
	st.At, st.Result = st.At-1, ae.Digest()
	for _, to := range n.JobClosest(key, n.replication()) {
		if to != nd.ID() && syncTo(nd, to, []wire.SyncItem{{Key: key, State: st, Proof: env.Proof}}) == nil {
			n.adv.add(BehaviourAlter+"/sent", 1)
		}
	}
	return true
}
