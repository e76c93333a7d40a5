package client

import (
	"context"
	"fmt"
	"time"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// commit commits to a job's output on its unit's board and waits until it
// may reveal it (claimclient.PostCommit, AwaitReveal): the unit's quorum
// of commitments is there, or the spec's reveal wait has passed on this
// client's clock. Once the commitment is posted the job's slot is freed
// (beginReveal): the wait holds the claim, not a slot, so slots all holding
// copies whose siblings nobody else can claim cannot stall each other. It
// returns the salt the sealed result carries, so the project can check
// the reveal against the commitment.
func (c *Client) commit(ctx context.Context, cl *claimclient.Claim, signed *job.Signed, spec *job.Spec, output []byte) ([]byte, error) {
	id := c.cfg.Agent.Identity()
	der, err := c.projectCert(ctx, cl, spec)
	if err != nil {
		return nil, err
	}
	key := signed.Key()
	cm := result.SignCommit(id.Key, key, spec.BoardKey(), output)
	post := &wire.CommitPost{Signed: signed.Encode(), Cert: der, Commit: cm.Encode()}
	p, err := c.claimer.PostCommit(ctx, cm.Board, post, int(spec.Commit), time.Duration(spec.RevealWaitMS())*time.Millisecond)
	st := p.Stats
	if err == nil {
		c.track(jobName(key), spec.Project, "revealing")
		waitCtx, unwait := c.beginReveal(ctx, jobName(key))
		st, err = c.claimer.AwaitReveal(waitCtx, p)
		unwait()
	}
	c.mu.Lock()
	c.commits.add(st, err != nil)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c.log.Debug("revealing", "job", jobName(key), "waited", st.Waited, "counts", st.Counts, "timeout", st.Timeout)
	return result.CommitSalt(id.Key, key), nil
}

// projectCert is the certificate (DER) of the job's project, which a
// board node needs to check the spec sent with a commitment: from this
// client's cache, else from one of the claim's nodes.
func (c *Client) projectCert(ctx context.Context, cl *claimclient.Claim, spec *job.Spec) ([]byte, error) {
	c.mu.Lock()
	der, ok := c.certs[string(spec.CertRef)]
	c.mu.Unlock()
	if ok {
		return der, nil
	}
	var errs []error
	for _, n := range cl.Nodes {
		var resp wire.GetResponse
		if err := c.cfg.Agent.Endpoint().Call(ctx, n, wire.ProtoJobGet, &wire.GetRequest{Keys: [][]byte{cl.Job}}, wire.MaxJobFrame, &resp); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, der := range resp.Certs {
			if string(job.CertRef(der)) == string(spec.CertRef) {
				c.mu.Lock()
				if c.certs == nil || len(c.certs) >= 64 {
					c.certs = map[string][]byte{}
				}
				c.certs[string(spec.CertRef)] = der
				c.mu.Unlock()
				return der, nil
			}
		}
	}
	return nil, fmt.Errorf("certificate of project %q from none of the job's nodes: %v", spec.Project, errs)
}

// CommitTotals sum what commit–reveal cost this client over its jobs.
type CommitTotals struct {
	Jobs     int           `json:"jobs"`     // commitments made
	Failed   int           `json:"failed"`   // commitments not posted
	RPCs     int           `json:"rpcs"`     // requests to board nodes
	Bytes    int           `json:"bytes"`    // request and reply bodies
	Lookups  int           `json:"lookups"`  // lookups of a unit's board
	Waited   time.Duration `json:"waited"`   // from commitment to reveal, summed
	Timeouts int           `json:"timeouts"` // reveals because the wait ended
	Early    int           `json:"early"`    // reveals at once, at the quota (breakRevealStall)
}

func (t *CommitTotals) add(st claimclient.CommitStats, failed bool) {
	t.Jobs++
	if failed {
		t.Failed++
	}
	t.RPCs += st.RPCs
	t.Bytes += st.Bytes
	t.Lookups += st.Lookups
	t.Waited += st.Waited
	if st.Timeout {
		t.Timeouts++
	}
	if st.Early {
		t.Early++
	}
}

// CommitTotals returns what commit–reveal has cost this client so far.
func (c *Client) CommitTotals() CommitTotals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits
}
