package client

import (
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// Claim groups chosen per claim (Config.ClaimMany 0). A job claimed
// beside others waits for a slot, and its T_finish runs from the claim,
// not from its start: a group is as big as this client can run before
// the deadlines, with room to spare. Each job of a group is a share of
// one request, one confirm and one result request per replica instead
// of its own (in `up bench`, 8 jobs a group cut the RPCs per job from
// ~9 to ~4).

// groupRounds is the share of T_finish a group is sized to end within:
// half, so that a run slower than the slowest seen here, or a slot that
// frees late, still ends in time (feasible's margin applies on top).
const groupRounds = 2

// autoGroup is how many jobs of spec's application a claim takes at
// once when Config.ClaimMany is 0, given est, the expected wall time
// of one run with its margin (package feasible; known false: the
// application never ran here), slots and held, the jobs this client
// already has to run: as many as the slots run one after another
// within T_finish / groupRounds, less those held; 1 when unknown or
// when no more fit; at most wire.MaxClaimMany.
func autoGroup(tFinish, est time.Duration, known bool, slots, held int) int {
	if !known || tFinish <= 0 {
		return 1
	}
	est = max(est, time.Millisecond)
	rounds := int64(tFinish / groupRounds / est)
	n := int64(slots)*rounds - int64(held)
	return int(min(max(n, 1), wire.MaxClaimMany))
}

// groupBound is the most jobs a claim of spec's job takes with others of
// its place: Config.ClaimMany when set, else autoGroup for spec (1 for
// a job claimed unvetted, spec nil). It remembers the size for the
// project's next query (findBatch).
func (c *Client) groupBound(project string, spec *job.Spec) int {
	if c.cfg.ClaimMany > 0 {
		return min(c.cfg.ClaimMany, wire.MaxClaimMany)
	}
	n := 1
	c.mu.Lock()
	if spec != nil {
		app := appKey(spec.Project, spec.App)
		_, known := c.feas.RunTime(app, 0)
		_, est, _ := c.feas.Feasible(app, 0, tFinish(spec), c.cfg.Now())
		n = autoGroup(tFinish(spec), est, known, c.cfg.Slots, len(c.claimed)+len(c.jobs))
	}
	c.lastGroup[project] = n
	c.mu.Unlock()
	return n
}

// specOf is v's spec (nil: v is nil, the job unvetted).
func specOf(v *vetted) *job.Spec {
	if v == nil {
		return nil
	}
	return v.spec
}

// findBatch is how many entries a query of project asks for:
// Config.FindBatch when set, else the size of the project's last claim
// group (1 before its first).
func (c *Client) findBatch(project string) int {
	if c.cfg.FindBatch > 0 {
		return c.cfg.FindBatch
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.lastGroup[project], 1)
}
