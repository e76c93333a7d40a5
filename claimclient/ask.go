package claimclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/wire"
)

// askAnswer is a node's answer to a claim request: its statement and
// reply (nil: it did not answer usably, for the reason why), and how long
// the request took.
type askAnswer struct {
	st    *claim.Statement
	reply []byte
	took  time.Duration
	why   string
}

// ask1 asks node n for the job, giving it the ask timeout, and returns
// its answer; a nil statement when it did not answer usably (a node that
// did not answer at all is marked dead, so lookups route around it); an
// error ends the attempt (ctx ended, or the node rate-limits this client).
func (c *Claimer) ask1(ctx context.Context, jobKey, ticket []byte, n peer.ID) (askAnswer, error) {
	if c.pace != nil {
		if err := c.pace(ctx, n); err != nil {
			return askAnswer{}, err
		}
	}
	var resp wire.ClaimResponse
	t0 := time.Now()
	actx, cancel := context.WithTimeout(ctx, c.ask)
	err := c.ep.Call(actx, n, wire.ProtoClaim, &wire.ClaimRequest{Job: jobKey, Ticket: ticket}, wire.MaxReplyBytes+64, &resp)
	cancel()
	took := time.Since(t0)
	if err != nil {
		return c.askFailed(ctx, n, err, took)
	}
	return replyAnswer(resp.Reply, jobKey, n, took), nil
}

// askFailed is the answer to a claim request to node n that failed with
// err after took: an error that ends the attempt (ctx ended, the node
// refuses this client for its rate or quota), else no statement, and a
// node that did not answer at all marked dead.
func (c *Claimer) askFailed(ctx context.Context, n peer.ID, err error, took time.Duration) (askAnswer, error) {
	ans := askAnswer{took: took}
	if ctx.Err() != nil {
		return ans, ctx.Err()
	}
	var we *wire.Error
	if errors.As(err, &we) && we.Status == wire.StatusRateLimited {
		return ans, err
	}
	if errors.As(err, &we) && we.Status == wire.StatusQuota {
		return ans, fmt.Errorf("node %s: %w", n, err)
	}
	if !errors.As(err, &we) {
		c.d.MarkDead(n) // no answer at all, not a refusal
	}
	ans.why = silentWhy(err, took)
	return ans, nil
}

// replyAnswer is node n's signed reply b for job jobKey as an answer: its
// statement, unless it does not decode or is not n's for the job.
func replyAnswer(b, jobKey []byte, n peer.ID, took time.Duration) askAnswer {
	ans := askAnswer{took: took}
	_, st, err := claim.Decode(b)
	switch {
	case err != nil:
		ans.why = fmt.Sprintf("undecodable reply: %v", err)
	case string(st.Job) != string(jobKey) || peer.ID(st.Node) != n:
		ans.why = "reply for another job or node"
	default:
		ans.st, ans.reply = st, b
	}
	return ans
}

// silentWhy says briefly why a claim request got no usable answer: the
// node's refusal, or the transport's error, after took.
func silentWhy(err error, took time.Duration) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return fmt.Sprintf("refused: %v", we)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && len(msg)-i < 120 {
		msg = msg[i+2:]
	}
	return fmt.Sprintf("%s after %s", msg, took.Round(time.Millisecond))
}
