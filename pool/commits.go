package pool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// boardNS keeps, per unit board key, the unit's commitments
// (result.Board): this node is among the r + claim.NearExtra nearest to
// the board key in its view (amongBoard); expireBoards deletes a board
// once its jobs expired.
const boardNS = "board"

func (p *Pool) registerCommitProtocols() {
	p.ep.Handle(wire.ProtoCommitPost, wire.MaxCommitFrame, []certs.Role{certs.RoleClient}, p.handleCommitPost)
	p.ep.Handle(wire.ProtoCommitGet, 1024, []certs.Role{certs.RoleClient, certs.RoleProject, certs.RoleNode}, p.handleCommitGet)
}

// handleCommitPost keeps a client's commitment on its unit's board and
// answers how many of the unit's jobs have one here.
func (p *Pool) handleCommitPost(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.CommitPost
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	n, err := p.PostCommit(from.Identity.PublicKey, &req)
	if err != nil {
		return nil, err
	}
	return &wire.CommitCount{Jobs: uint16(n)}, nil
}

// PostCommit checks a commitment sent by the client of key sender and
// adds it to its unit's board, returning how many of the unit's jobs have
// one. It checks: the commitment is the sender's and signed by it; the
// job it names is the spec sent, signed by the project's certified key,
// not expired on this node's clock, asking for commit–reveal; the board
// it names is that spec's unit's. It does not check that the client
// claimed the job (only the job's replicas know): a commitment by a
// client that holds no claim can add to the count, never stand for
// another client's result (the commitment names its client).
func (p *Pool) PostCommit(sender []byte, req *wire.CommitPost) (int, error) {
	c, err := result.DecodeCommit(req.Commit)
	if err != nil {
		return 0, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	if !bytes.Equal(c.Client, sender) {
		return 0, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("commitment to job %x names another client than its sender", c.Job))
	}
	if err := c.Verify(); err != nil {
		return 0, overlay.StatusErr(wire.StatusUnauthorized, err)
	}
	spec, err := p.commitSpec(req, c)
	if err != nil {
		return 0, err
	}
	if !p.amongBoard(c.Board) {
		return 0, overlay.StatusErr(wire.StatusMoved, fmt.Errorf("unit board %x: this node is not among its %d nearest here", c.Board, p.r+claim.NearExtra))
	}
	p.boardMu.Lock()
	defer p.boardMu.Unlock()
	b, err := p.board(c.Board)
	if err != nil {
		return 0, err
	}
	b.Expires = max(b.Expires, spec.Expires())
	added, err := b.Add(c)
	if err != nil {
		return b.Jobs(), overlay.StatusErr(wire.StatusQuota, err)
	}
	if added {
		if err := p.st.Put(store.Key(boardNS, c.Board), b.Encode()); err != nil {
			return 0, fmt.Errorf("store commitment to job %x: %w", c.Job, err)
		}
	}
	return b.Jobs(), nil
}

// amongBoard reports whether this node is among the r + claim.NearExtra
// nodes nearest to a board key in its own view (the margin covers a
// client's lookup finding peers this node has not met yet): a client
// cannot fill the store of a node far from a unit with its board.
func (p *Pool) amongBoard(board []byte) bool {
	return slices.Contains(p.dht.NearestLocal(keyspace.KeyPos(board), p.r+claim.NearExtra), p.self())
}

// boardSweepEvery is the least time between two sweeps of expired boards,
// in ms on this node's clock.
const boardSweepEvery = int64(time.Minute / time.Millisecond)

// expireBoards deletes the boards kept here whose jobs have all expired
// on this node's clock, at most once per boardSweepEvery (ExpireNow calls
// it): a board no one reads after its jobs expired would stay for ever.
// It returns how many it deleted.
func (p *Pool) expireBoards(now int64) (int, error) {
	p.boardMu.Lock()
	defer p.boardMu.Unlock()
	if p.boardSwept != 0 && now >= p.boardSwept && now-p.boardSwept < boardSweepEvery {
		return 0, nil
	}
	p.boardSwept = now
	b := p.st.NewBatch()
	err := p.st.Scan(store.Key(boardNS), func(k, v []byte) bool {
		if board, err := result.DecodeBoard(v); err != nil || job.Expired(board.Expires, now) {
			b.Delete(append([]byte(nil), k...))
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("sweep unit boards: %w", err)
	}
	n := b.Len()
	if n == 0 {
		return 0, nil
	}
	if err := b.Commit(true); err != nil {
		return 0, fmt.Errorf("delete %d expired unit boards: %w", n, err)
	}
	return n, nil
}

// Boards counts the unit boards kept here.
func (p *Pool) Boards() (int, error) {
	n := 0
	err := p.st.Scan(store.Key(boardNS), func(_, _ []byte) bool { n++; return true })
	return n, err
}

// commitSpec checks the job a commitment names against the signed spec
// sent with it and returns the spec.
func (p *Pool) commitSpec(req *wire.CommitPost, c *result.Commit) (*job.Spec, error) {
	signed, spec, err := job.Decode(req.Signed)
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("commitment's job: %w", err))
	}
	switch {
	case !bytes.Equal(signed.Key(), c.Job):
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("commitment to job %x sent with job %s", c.Job, signed.CID()))
	case !spec.UsesCommit():
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("job %s asks for no commitment", signed.CID()))
	case !bytes.Equal(spec.BoardKey(), c.Board):
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("commitment to job %s names another unit's board", signed.CID()))
	case job.Expired(spec.Expires(), p.nowMS()):
		return nil, overlay.StatusErr(wire.StatusGone, fmt.Errorf("job %s expired", signed.CID()))
	}
	der := req.Cert
	if len(der) == 0 {
		held, ok := p.Cert(spec.CertRef)
		if !ok {
			return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("job %s: certificate of project %q not sent", signed.CID(), spec.Project))
		}
		der = held
	}
	if ref := sha256.Sum256(der); !bytes.Equal(ref[:], spec.CertRef) {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("job %s: the certificate sent is not the one it names", signed.CID()))
	}
	id, err := p.ep.Admission().Verifier().VerifyCert(der, p.env.Now(), certs.RoleProject)
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("job %s: project certificate: %w", signed.CID(), err))
	}
	if id.Name != spec.Project {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("job %s names project %q, its certificate is %q's", signed.CID(), spec.Project, id.Name))
	}
	if err := signed.VerifyOnce(id.PublicKey, p.sigs); err != nil {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("job %s: %w", signed.CID(), err))
	}
	return spec, nil
}

// board reads a unit's board (an empty one when none is kept, or the one
// kept has expired on this node's clock, which is then dropped).
// p.boardMu is held.
func (p *Pool) board(key []byte) (*result.Board, error) {
	raw, err := p.st.Get(store.Key(boardNS, key))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &result.Board{}, nil
		}
		return nil, fmt.Errorf("read unit board %x: %w", key, err)
	}
	b, err := result.DecodeBoard(raw)
	if err != nil {
		return nil, fmt.Errorf("unit board %x: %w", key, err)
	}
	if job.Expired(b.Expires, p.nowMS()) {
		_ = p.st.Delete(store.Key(boardNS, key))
		return &result.Board{}, nil
	}
	return b, nil
}

// handleCommitGet returns the commitments kept for a unit.
func (p *Pool) handleCommitGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.CommitGetRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	p.boardMu.Lock()
	b, err := p.board(req.Board)
	p.boardMu.Unlock()
	if err != nil {
		return nil, err
	}
	resp := &wire.CommitGetResponse{Jobs: uint16(b.Jobs())}
	for _, c := range b.Commits {
		resp.Commits = append(resp.Commits, c.Encode())
	}
	return resp, nil
}
