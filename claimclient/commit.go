package claimclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// CommitStats are what one commit–reveal cost a client: RPCs and bytes
// sent and received (requests and replies, frames' bodies), lookups of
// the unit's board, and how long the reveal waited after the commitment.
type CommitStats struct {
	RPCs    int
	Bytes   int
	Lookups int
	Polls   int
	Waited  time.Duration
	Counts  []int // the board nodes' counts when the client revealed
	Timeout bool  // revealed because the wait ended, not the quorum
	Early   bool  // revealed at once on ErrRevealEarly
}

// ErrRevealEarly, as the cause of the context AwaitReveal waits under,
// ends the wait: the result is revealed at once, before the unit's quorum
// committed (a client whose every held job waits to reveal, at its quota,
// would otherwise wait RevealWait for siblings it leaves no room to run).
var ErrRevealEarly = errors.New("revealed early: every job held waits to reveal, at the quota")

// defaultCommitPoll is the first pause between counts of a unit's
// commitments; it doubles up to 16 times that.
const defaultCommitPoll = 500 * time.Millisecond

// SetCommitPoll sets the first pause between counts of a unit's
// commitments (doubling up to 16×first). Set it before the first commit.
func (c *Claimer) SetCommitPoll(first time.Duration) { c.commitPoll = first }

// Commit posts a commitment (PostCommit) and waits until it may reveal
// (AwaitReveal).
func (c *Claimer) Commit(ctx context.Context, board []byte, post *wire.CommitPost, quorum int, wait time.Duration) (CommitStats, error) {
	p, err := c.PostCommit(ctx, board, post, quorum, wait)
	if err != nil {
		return p.Stats, err
	}
	return c.AwaitReveal(ctx, p)
}

// PendingReveal is a commitment posted whose result is not revealed yet:
// what AwaitReveal needs to count the unit's commitments.
type PendingReveal struct {
	Stats  CommitStats // what the commitment cost so far
	board  []byte
	nodes  []peer.ID // the board's nodes
	counts []int     // their counts when they stored the commitment
	start  time.Time // on the client's clock: once a majority stored it
	quorum int       // commitments of the unit to wait for
	wait   time.Duration
}

// PostCommit posts a commitment to the r nodes closest to the unit's board
// key. The commitment counts posted once a majority of the board's nodes
// stored it; short of that after the retries it returns an error and the
// caller must not reveal (the project would find no commitment). quorum
// and wait are what AwaitReveal waits for.
func (c *Claimer) PostCommit(ctx context.Context, board []byte, post *wire.CommitPost, quorum int, wait time.Duration) (*PendingReveal, error) {
	p := &PendingReveal{board: board, quorum: quorum, wait: wait}
	st := &p.Stats
	r := c.d.Replication()
	st.Lookups++
	nodes, err := c.d.ClosestN(dht.WithPurpose(ctx, dht.PurposeResult), board, r)
	if err != nil {
		return p, fmt.Errorf("commit: find the unit's board %x: %w", board, err)
	}
	p.nodes = nodes
	postBytes := wireSize(post)
	stored := map[string]int{}
	last := map[string]error{}
	for attempt := 0; attempt < 3 && len(stored) < majority(r); attempt++ {
		todo := make([]string, 0, len(nodes))
		for _, n := range ids(nodes) {
			if _, ok := stored[n]; !ok {
				todo = append(todo, n)
			}
		}
		counts := make(map[string]*wire.CommitCount, len(todo)) // filled before the fan-out: read only in it
		for _, n := range todo {
			counts[n] = &wire.CommitCount{}
		}
		errs := c.fanOutResp(ctx, todo, wire.ProtoCommitPost, post, 1024, func(n string) wire.Validator { return counts[n] })
		for n, err := range errs {
			st.RPCs++
			st.Bytes += postBytes
			if err != nil {
				last[n] = err
				continue
			}
			st.Bytes += wireSize(counts[n])
			stored[n] = int(counts[n].Jobs)
		}
		if len(stored) < majority(r) && !sleep(ctx, c.firstPoll()) {
			break
		}
	}
	if len(stored) < majority(r) {
		errs := make([]error, 0, len(last))
		for n, err := range last {
			errs = append(errs, fmt.Errorf("node %s: %w", peer.ID(n), err))
		}
		return p, fmt.Errorf("commitment not posted: %d of the board's %d nodes stored it, a majority is %d: %w",
			len(stored), r, majority(r), errors.Join(errs...))
	}
	p.start = c.now()
	for _, n := range stored {
		p.counts = append(p.counts, n)
	}
	return p, nil
}

// AwaitReveal waits until a posted commitment's result may be revealed
// (result.RevealNow): until f+1 of the board's nodes count the unit's
// quorum of jobs committed, or the wait has passed since the commitment
// on this client's clock, or until ctx is cancelled with cause
// ErrRevealEarly. It returns the commitment's whole cost.
func (c *Claimer) AwaitReveal(ctx context.Context, p *PendingReveal) (CommitStats, error) {
	st := p.Stats
	f := (c.d.Replication() - 1) / 3
	pause, counts := c.firstPoll(), p.counts
	for !result.RevealNow(counts, p.quorum, f, c.now().Sub(p.start).Milliseconds(), p.wait.Milliseconds()) {
		if !sleep(ctx, min(pause, p.wait-c.now().Sub(p.start))) {
			if errors.Is(context.Cause(ctx), ErrRevealEarly) {
				st.Early = true
				break
			}
			return st, fmt.Errorf("commitment posted, waiting to reveal: %w", ctx.Err())
		}
		pause = min(2*pause, 16*c.firstPoll())
		counts = c.countCommits(ctx, p.nodes, p.board, &st)
	}
	st.Waited, st.Counts = c.now().Sub(p.start), counts
	st.Timeout = st.Waited >= p.wait
	return st, nil
}

// firstPoll is the first pause between counts of a unit's commitments.
func (c *Claimer) firstPoll() time.Duration {
	if c.commitPoll <= 0 {
		return defaultCommitPoll
	}
	return c.commitPoll
}

// countCommits asks the board's nodes how many of the unit's jobs have a
// commitment there; a node that fails is left out.
func (c *Claimer) countCommits(ctx context.Context, nodes []peer.ID, board []byte, st *CommitStats) []int {
	req := &wire.CommitGetRequest{Board: board}
	resps := make(map[string]*wire.CommitGetResponse, len(nodes)) // filled before the fan-out: read only in it
	for _, n := range ids(nodes) {
		resps[n] = &wire.CommitGetResponse{}
	}
	errs := c.fanOutResp(ctx, ids(nodes), wire.ProtoCommitGet, req, wire.MaxCommitFrame, func(n string) wire.Validator { return resps[n] })
	st.Polls++
	var counts []int
	for n, err := range errs {
		st.RPCs++
		st.Bytes += wireSize(req)
		if err == nil {
			st.Bytes += wireSize(resps[n])
			counts = append(counts, int(resps[n].Jobs))
		}
	}
	return counts
}

// wireSize is the encoded size of a message, in bytes.
func wireSize(m any) int {
	b, err := wire.Marshal(m)
	if err != nil {
		return 0
	}
	return len(b)
}
