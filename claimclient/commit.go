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
}

// defaultCommitPoll is the first pause between counts of a unit's
// commitments; it doubles up to 16 times that.
const defaultCommitPoll = 500 * time.Millisecond

// SetCommitPoll sets the first pause between counts of a unit's
// commitments (doubling up to 16×first). Set it before the first commit.
func (c *Claimer) SetCommitPoll(first time.Duration) { c.commitPoll = first }

// Commit posts a commitment to the r nodes closest to the unit's board
// key and waits until it may reveal (result.RevealNow): until f+1 of the
// board's nodes count quorum of the unit's jobs committed, or wait has
// passed since the commitment on this client's clock. The commitment
// counts posted once a majority of the board's nodes stored it; short of
// that after the retries it returns an error and the caller must not
// reveal (the project would find no commitment).
func (c *Claimer) Commit(ctx context.Context, board []byte, post *wire.CommitPost, quorum int, wait time.Duration) (CommitStats, error) {
	var st CommitStats
	r := c.d.Replication()
	st.Lookups++
	nodes, err := c.d.ClosestN(dht.WithPurpose(ctx, dht.PurposeResult), board, r)
	if err != nil {
		return st, fmt.Errorf("commit: find the unit's board %x: %w", board, err)
	}
	postBytes := wireSize(post)
	stored := map[string]int{}
	last := map[string]error{}
	pause := c.commitPoll
	if pause <= 0 {
		pause = defaultCommitPoll
	}
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
		if len(stored) < majority(r) && !sleep(ctx, pause) {
			break
		}
	}
	if len(stored) < majority(r) {
		errs := make([]error, 0, len(last))
		for n, err := range last {
			errs = append(errs, fmt.Errorf("node %s: %w", peer.ID(n), err))
		}
		return st, fmt.Errorf("commitment not posted: %d of the board's %d nodes stored it, a majority is %d: %w",
			len(stored), r, majority(r), errors.Join(errs...))
	}
	start := c.now()
	f := (r - 1) / 3
	counts := make([]int, 0, len(stored))
	for _, n := range stored {
		counts = append(counts, n)
	}
	for !result.RevealNow(counts, quorum, f, c.now().Sub(start).Milliseconds(), wait.Milliseconds()) {
		if !sleep(ctx, min(pause, wait-c.now().Sub(start))) {
			return st, fmt.Errorf("commitment posted, waiting to reveal: %w", ctx.Err())
		}
		pause = min(2*pause, 16*c.commitPoll)
		counts = c.countCommits(ctx, nodes, board, &st)
	}
	st.Waited, st.Counts = c.now().Sub(start), counts
	st.Timeout = st.Waited >= wait
	return st, nil
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
