package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/wire"
)

// vetted is a job checked before its claim: its verified spec, and the
// unit it marked as run here (to forget if the job is not run after all).
type vetted struct {
	signed *job.Signed
	spec   *job.Spec
	unit   string
}

// vet reads the job's spec from the nodes the entry names, before any
// claim, and decides whether this client runs it: not when it is a copy
// of a unit the client ran (ErrSameUnit: a redundant copy must come from
// another client), nor when its application, or for a WebAssembly module
// its project's modules, is not allowed (ErrNotAllowed), nor when it
// names blobs and the client has no Blobs (ErrNoBlobs), nor when it
// cannot finish it before its T_finish (ErrDeadline). A job it runs
// marks its unit as run here. When no node
// the entry names sends the spec, v is nil: the job is claimed unvetted
// and checked once claimed.
func (c *Client) vet(ctx context.Context, project string, h wire.IndexHit) (v *vetted, err error) {
	return c.vetFrom(ctx, project, h, nil)
}

// vetFrom is vet with the specs some node already sent (prefetchSpecs;
// nil: none): a job's spec there is used as it came, checked, instead of
// asking for it again; one that failed there, or that replica did not
// send, is asked of the next replica only.
func (c *Client) vetFrom(ctx context.Context, project string, h wire.IndexHit, pre map[string]gotSpec) (v *vetted, err error) {
	for i, r := range h.Replicas {
		if i == vetTries {
			break
		}
		var s *job.Signed
		var spec *job.Spec
		if g, ok := pre[string(h.Job)]; ok && i == 0 {
			if g.err != nil {
				continue // this replica was asked already: the next
			}
			s, spec = g.signed, g.spec
		} else if s, spec, err = getSpec(ctx, c.cfg.Agent, c.cfg.Now(), peer.ID(r), h.Job, c.sigs); err != nil {
			continue
		}
		cid := s.CID()
		c.noteSeen(project, h.Job, spec.App)
		if spec.Project != project {
			return nil, fmt.Errorf("job %s is of project %q, asked %q: %w", cid, spec.Project, project, errOtherProject)
		}
		if err := c.refusal(cid.String(), spec); err != nil {
			return nil, err
		}
		if err := c.feasible(cid.String(), spec); err != nil {
			return nil, err
		}
		seen, unit := c.seenUnit(spec)
		if seen {
			return &vetted{unit: unit}, fmt.Errorf("job %s: %w", cid, ErrSameUnit)
		}
		return &vetted{signed: s, spec: spec, unit: unit}, nil
	}
	return nil, nil
}

// vetTries bounds the nodes asked for a job's spec before its claim.
const vetTries = 3

// skipMax bounds the jobs a client remembers not to take, per project:
// the oldest are forgotten first (their copies have likely run since).
const skipMax = wire.MaxQuerySkips / 2

// skipped is a job this client will not take, and the unit it copies
// ("": it is not allowed or needs blobs).
type skipped struct {
	job  string
	unit string
}

// skipping is, per project, what the next query passes over.
type skipping struct {
	jobs    []skipped                     // oldest first, at most skipMax
	at      []peer.ID                     // the nodes with declines, in order
	decline map[peer.ID][][]byte          // jobs a node served and this client did not take
	reasons map[peer.ID][]wire.SkipReason // why, parallel to decline
}

// skip remembers that this client will not take a job an index node
// served it (from: "" when unknown): the next queries pass it over, and
// from ends its quarantine, so another client gets it at once, and
// records why (the project reads it with `up project describe`).
func (c *Client) skip(project string, jobKey []byte, unit string, from peer.ID, why wire.SkipReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sk := c.skips[project]
	if sk == nil {
		sk = &skipping{decline: map[peer.ID][][]byte{}, reasons: map[peer.ID][]wire.SkipReason{}}
		c.skips[project] = sk
	}
	if len(sk.jobs) >= skipMax {
		sk.jobs = append(sk.jobs[:0], sk.jobs[1:]...)
	}
	sk.jobs = append(sk.jobs, skipped{job: string(jobKey), unit: unit})
	if from == "" {
		return
	}
	if sk.decline[from] == nil {
		sk.at = append(sk.at, from)
	}
	if len(sk.decline[from]) < wire.MaxQuerySkips-skipMax {
		sk.decline[from] = append(sk.decline[from], jobKey)
		sk.reasons[from] = append(sk.reasons[from], why)
	}
}

// unskipUnit forgets the skipped copies of a unit that was not run here
// after all: they are this client's to take again.
func (c *Client) unskipUnit(unit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sk := range c.skips {
		keep := sk.jobs[:0]
		for _, s := range sk.jobs {
			if s.unit != unit {
				keep = append(keep, s)
			}
		}
		clear(sk.jobs[len(keep):])
		sk.jobs = keep
	}
}

// skipping is what the project's next query passes over: every job
// skipped, and the declines of one node (taken: sent once).
func (c *Client) skipping(project string) indexclient.Skipping {
	c.mu.Lock()
	defer c.mu.Unlock()
	sk := c.skips[project]
	if sk == nil {
		return indexclient.Skipping{}
	}
	var out indexclient.Skipping
	if len(sk.at) > 0 {
		out.Node, out.Decline, out.Reasons = sk.at[0], sk.decline[sk.at[0]], sk.reasons[sk.at[0]]
		delete(sk.decline, sk.at[0])
		delete(sk.reasons, sk.at[0])
		sk.at = sk.at[1:]
	}
	declined := map[string]bool{}
	for _, k := range out.Decline {
		declined[string(k)] = true
	}
	for _, s := range sk.jobs {
		if !declined[s.job] {
			out.Skip = append(out.Skip, []byte(s.job))
		}
	}
	return out
}

// hasDeclines reports whether declines of the project wait to be sent.
func (c *Client) hasDeclines(project string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	sk := c.skips[project]
	return sk != nil && len(sk.at) > 0
}

// find asks the index for the project's jobs, passing over those this
// client will not take, within the client's own query rate.
func (c *Client) find(ctx context.Context, project string) ([]pendingHit, error) {
	sk := c.skipping(project)
	sk.Wait = c.pace.Wait
	found, at, err := c.cfg.Agent.Index().FindSkipping(ctx, c.query(project), c.claimRoom(c.findBatch(project)), sk)
	c.countQuery(len(found), err)
	c.noteQuery(project, found, err)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.listed[project] = c.cfg.Now()
	c.mu.Unlock()
	hits := make([]pendingHit, 0, len(found))
	for _, h := range found {
		hits = append(hits, pendingHit{project: project, hit: h, since: c.cfg.Now(), from: at})
	}
	return hits, nil
}

// isSkip reports an error of vet that skips the job (rather than a
// failure to vet it).
func isSkip(err error) bool {
	return errors.Is(err, ErrSameUnit) || errors.Is(err, ErrNotAllowed) || errors.Is(err, ErrNoBlobs) || errors.Is(err, errOtherProject) ||
		errors.Is(err, ErrDeadline)
}

// skipReason is what this client tells the nodes of a job it skips or
// gives back for err (SkipUnknown when err says nothing it knows).
func skipReason(err error) wire.SkipReason {
	switch {
	case errors.Is(err, ErrSameUnit):
		return wire.SkipSameUnit
	case errors.Is(err, ErrNotAllowed), errors.Is(err, runner.ErrNotAllowed):
		return wire.SkipNotAllowed
	case errors.Is(err, ErrNoBlobs):
		return wire.SkipNoBlobs
	case errors.Is(err, ErrDeadline):
		return wire.SkipDeadline
	}
	return wire.SkipUnknown
}

// releaseReason is the reason of a claimed job given back for err while
// the step whose reason is step was under way: a reason err names, else
// stopping when ctx ended, else the step's.
func releaseReason(ctx context.Context, err error, step wire.SkipReason) wire.SkipReason {
	switch why := skipReason(err); {
	case why != wire.SkipUnknown:
		return why
	case ctx.Err() != nil:
		return wire.SkipStopping
	}
	return step
}

// errOtherProject reports an entry of a project's query naming a job of
// another project (a keyword two projects share).
var errOtherProject = errors.New("job of another project")
