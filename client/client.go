package client

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client/feasible"
	"github.com/up-pool/up/client/sched"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/recent"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/wire"
)

// Client is a running worker.
type Client struct {
	cfg       Config
	log       *slog.Logger
	claimer   *claimclient.Claimer
	commits   CommitTotals      // commit–reveal costs (commit.go); mu
	bg        sync.WaitGroup    // cycles going on after their slots were freed (runFreeing)
	overQuota bool              // a claim was refused for the quota since a held job last ended; mu
	waiting   []waiter          // jobs waiting to reveal, oldest first (slot.go); mu
	certs     map[string][]byte // project certificates by CertRef, for commitments; mu
	seal      sessions          // result sessions by project (sealing.go)
	sigs      *sigverify.Once   // project signatures verified (a batch's root once)

	mu        sync.Mutex
	queries   map[string]string // by project: its index query
	ctl       controls          // paused, projects attached and detached, jobs held (control.go)
	exp       explainLog        // queries and decisions, for Explain (explain.go)
	hist      []FinishedJob     // the latest finished jobs, oldest first (history.go)
	credit    creditCache       // the latest gathering of this client's credit (credit.go)
	sched     *sched.Scheduler
	feas      *feasible.Estimator // on/off periods and run times (deadline.go)
	rng       *rand.Rand
	backoff   map[string]backoff
	jobs      map[string]*JobStatus   // by job CID, while in progress
	units     recent.Set[[32]byte]    // units this client ran a copy of, by unit key (the latest unitsRemembered)
	pending   []pendingHit            // entries served and not claimed yet (RunOne)
	claimed   []claimedAhead          // jobs won beside another of their place, not run yet (many.go)
	groups    map[string]*resultGroup // by job key: the group whose results leave together (resultgroup.go)
	skips     map[string]*skipping    // by project: jobs this client will not take
	listed    map[string]time.Time    // by project: when the index last served it entries
	lastGroup map[string]int          // by project: the size its last claim group was given (ClaimMany 0: findBatch)
	pace      *pacer                  // paces queries and claim requests per node
	done      int
	failed    int
	started   int
	// released counts claimed jobs given back; queryCount index queries
	// by result (found, empty, error).
	released   int
	queryCount map[string]int
	// claimTimes are the durations of the latest won claims (claimWindow
	// at most), by the client's clock; claimHist all of them, for /metrics.
	claimTimes durationRing
	claimHist  prometheus.Histogram
}

type backoff struct {
	until time.Time
	wait  time.Duration
}

// New checks the configuration and builds a worker.
func New(cfg Config) (*Client, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Attributes.Memory == 0 {
		cfg.Attributes.Memory = machineMemory()
	}
	cfg.Attributes = cfg.Attributes.withPlatform()
	c := &Client{queries: map[string]string{}}
	ctl, err := newControls(cfg, &c.mu)
	if err != nil {
		return nil, err
	}
	var ps []sched.Project
	for _, p := range ctl.projects {
		ps = append(ps, sched.Project{Name: p.Name, Share: p.Share})
		c.queries[p.Name] = QueryFor(p.Name, cfg.Attributes)
	}
	for _, p := range cfg.Projects {
		if p.Query != "" {
			c.queries[p.Name] = p.Query
		}
	}
	s, err := sched.New(ps, cfg.Slots)
	if err != nil {
		return nil, err
	}
	feas, err := loadFeasible(cfg)
	if err != nil {
		return nil, err
	}
	a := cfg.Agent
	*c = Client{
		cfg: cfg, log: cfg.Logger, queries: c.queries, sched: s, ctl: ctl, feas: feas,
		claimer:   claimclient.NewClaimer(a.Endpoint(), a.DHT(), cfg.Now, 0),
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0xc11e)),
		backoff:   map[string]backoff{},
		jobs:      map[string]*JobStatus{},
		units:     recent.NewSet[[32]byte](unitsRemembered),
		sigs:      sigverify.NewOnce(verifiedRemembered),
		skips:     map[string]*skipping{},
		listed:    map[string]time.Time{},
		lastGroup: map[string]int{},
		pace:      newPacer(cfg.Pace, max(1, int(cfg.Pace))),
	}
	c.claimer.SetPace(c.pace.Wait)
	c.claimer.SetSigner(a.Identity().Key)
	if cfg.TicketHold > 0 {
		c.claimer.SetTickets(cfg.TicketHold)
	}
	c.claimer.SetCommitPoll(cfg.CommitPoll)
	c.claimHist = newClaimHistogram()
	c.cfg.Runner = recorder{Executor: cfg.Runner, c: c}
	return c, nil
}

// Run works until ctx ends or MaxJobs jobs ran: Slots workers each pick a
// project by the debt scheduler, find and claim a job, run it and submit
// its result. The client's on and off periods are recorded from Run's
// start to its return (package client/feasible).
func (c *Client) Run(ctx context.Context) error {
	defer c.onOff()()
	var wg sync.WaitGroup
	for range c.cfg.Slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.worker(ctx)
		}()
	}
	wg.Wait()
	c.releaseClaimed(ctx)
	c.bg.Wait() // jobs waiting to reveal, their slots freed
	if c.cfg.MaxJobs > 0 && c.Done() >= c.cfg.MaxJobs {
		return nil
	}
	return ctx.Err()
}

func (c *Client) worker(ctx context.Context) {
	for ctx.Err() == nil {
		if !c.reserve() {
			return // MaxJobs reached: the other slots finish theirs
		}
		proj, wait := c.pick()
		if proj == "" {
			c.unreserve()
			c.nap(ctx, wait)
			continue
		}
		ran, err := c.runFreeing(ctx, proj)
		if !ran {
			c.unreserve()
		}
		switch {
		case errors.Is(err, errStopping):
			// Paused or detached during the cycle: pick waits for Resume.
		case err == nil, isSkip(err):
			// A job released as not this client's (claimed unvetted) is
			// passed over from now on: no reason to wait.
			c.clearBackoff(proj)
		case errors.Is(err, claimclient.ErrOverQuota):
			// At the quota: the entries are kept, tried again once a job
			// held ends (end wakes the nap) or after quotaNap.
			c.nap(ctx, quotaNap)
		case rateLimited(err):
			// Paced under the nodes' limits, refused all the same (a node
			// configured lower): a pause, not a growing backoff.
			c.log.Info("rate limited", "project", proj, "err", err)
			c.pause(proj, c.cfg.BackoffMin)
		case errors.Is(err, indexclient.ErrNoJob):
			c.log.Debug("no job", "project", proj, "err", err)
			c.setBackoff(proj)
		case ctx.Err() != nil:
			return
		default:
			c.log.Warn("job cycle failed", "project", proj, "err", err)
			c.setBackoff(proj)
		}
	}
}

// quotaNap is the longest a worker waits, at the quota, for a job held to
// end before it tries again (a record node may have raised the quota).
const quotaNap = 5 * time.Second

// reserve counts a job about to run against MaxJobs.
func (c *Client) reserve() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.MaxJobs > 0 && c.started >= c.cfg.MaxJobs {
		return false
	}
	c.started++
	return true
}

func (c *Client) unreserve() {
	c.mu.Lock()
	c.started--
	c.mu.Unlock()
}

// pick chooses the project to work for: the highest debt among those not
// backing off; or none, and how long until one is ready.
func (c *Client) pick() (string, time.Duration) {
	now := time.Now() // backoff is wall-clock time, whatever protocol clock is used
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctl.paused {
		return "", c.cfg.BackoffMax // until Resume wakes the worker
	}
	name, ok := c.sched.Next(func(n string) bool { return c.runnableLocked(n) && !now.Before(c.backoff[n].until) })
	if ok {
		return name, 0
	}
	wait := c.cfg.BackoffMax
	for _, b := range c.backoff {
		if d := b.until.Sub(now); d < wait {
			wait = d
		}
	}
	return "", max(wait, 10*time.Millisecond)
}

// setBackoff doubles the project's backoff, up to BackoffMax, or up to
// listedBackoff while the index served the client entries of the project
// lately (its queries passed them over, or other clients claimed them
// first): work is listed, and the client looks again often enough to
// take it up when it appears.
func (c *Client) setBackoff(proj string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ceiling := c.cfg.BackoffMax
	if at, ok := c.listed[proj]; ok && c.cfg.Now().Sub(at) < listedFor {
		ceiling = min(ceiling, listedBackoff)
	}
	b := c.backoff[proj]
	if b.wait == 0 {
		b.wait = c.cfg.BackoffMin
	} else {
		b.wait = min(2*b.wait, ceiling)
	}
	// Full jitter around the step: between half and the whole of it.
	j := b.wait/2 + time.Duration(c.rng.Int64N(int64(b.wait/2)+1))
	b.until = time.Now().Add(j)
	c.backoff[proj] = b
}

// listedBackoff caps a project's backoff while the index served entries
// of it within listedFor.
const (
	listedBackoff = 30 * time.Second
	listedFor     = 10 * time.Minute
)

// pause holds the project back for d, leaving its backoff as it is.
func (c *Client) pause(proj string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoff[proj]
	b.until = time.Now().Add(d)
	c.backoff[proj] = b
}

// rateLimited reports an error of a node refusing the client for its rate.
func rateLimited(err error) bool {
	var we *wire.Error
	return errors.Is(err, errRateLimited) || (errors.As(err, &we) && we.Status == wire.StatusRateLimited)
}

func (c *Client) clearBackoff(proj string) {
	c.mu.Lock()
	delete(c.backoff, proj)
	c.mu.Unlock()
}

// JobStatus is what the client shows about a job in progress.
type JobStatus struct {
	Job     string    `json:"job"`
	Project string    `json:"project"`
	App     string    `json:"app"`
	State   string    `json:"state"` // claiming, fetching, running, submitting
	Since   time.Time `json:"since"`
	Elapsed float64   `json:"elapsed_s"` // seconds since Since
	// Limits are the job's limits, once it runs (nil before).
	Limits *JobLimits `json:"limits,omitempty"`
}

// Status is the client's /status document.
type Status struct {
	Role     string      `json:"role"`   // always "client": tells a client's API from a node's
	Paused   bool        `json:"paused"` // claiming no job: see Client.Pause
	Done     int         `json:"done"`
	Failed   int         `json:"failed"`
	Released int         `json:"released"` // claimed jobs given back unrun or unfinished
	Running  []JobStatus `json:"running"`
	// Debts are the projects' debts in seconds of CPU (positive: owed time).
	Debts map[string]float64 `json:"debts_s"`
	// Backoff are the seconds left to wait, by project backing off.
	Backoff map[string]float64 `json:"backoff_s"`
	// Claims counts the claim attempts by outcome (lost: aborted on
	// another client's claim).
	Claims claimclient.Stats `json:"claims"`
	// Queries counts the index queries by result: found, empty, error.
	Queries map[string]int `json:"queries"`
	// ClaimP50 and ClaimP99 are the median and 99th percentile
	// (nearest-rank), in seconds, of how long the latest won claims took,
	// from the start of the claim to its win; 0 before any.
	ClaimP50 float64 `json:"claim_p50_s"`
	ClaimP99 float64 `json:"claim_p99_s"`
	// ClaimsTimed is how many won claims the quantiles are over: the
	// latest, up to 1024.
	ClaimsTimed int `json:"claims_timed"`
	// Projects are the projects the client knows, attached or detached,
	// by name.
	Projects []ProjectStatus `json:"projects"`
}

// Status reports what the client is doing.
func (c *Client) Status() Status {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Role: "client", Done: c.done, Failed: c.failed, Released: c.released,
		Debts: map[string]float64{}, Backoff: map[string]float64{}, Claims: c.claimer.Stats(),
		Queries: maps.Clone(c.queryCount)}
	for p, d := range c.sched.Debts() {
		st.Debts[p] = d.Seconds()
	}
	for _, j := range c.jobs {
		js := *j
		if j.Limits != nil {
			l := *j.Limits
			js.Limits = &l
		}
		js.Elapsed = now.Sub(j.Since).Round(time.Millisecond).Seconds()
		st.Running = append(st.Running, js)
	}
	sort.Slice(st.Running, func(i, k int) bool { return st.Running[i].Since.Before(st.Running[k].Since) })
	c.claimLatency(&st)
	wall := time.Now()
	for p, b := range c.backoff {
		if wall.Before(b.until) {
			st.Backoff[p] = b.until.Sub(wall).Round(time.Millisecond).Seconds()
		}
	}
	st.Paused, st.Projects = c.ctl.paused, c.projectStatusLocked(st.Debts, st.Backoff)
	return st
}

// Done is the number of jobs whose result was submitted.
func (c *Client) Done() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// track records a job's state and logs each change at Info, so the log
// shows what the client is doing.
func (c *Client) track(cid, project, state string) {
	now := c.cfg.Now()
	c.mu.Lock()
	j := c.jobs[cid]
	if j == nil {
		j = &JobStatus{Job: cid, Project: project, Since: now}
		c.jobs[cid] = j
	}
	changed := j.State != state
	j.State = state
	app, since := j.App, j.Since
	c.mu.Unlock()
	if changed {
		c.log.Info("job "+state, "job", cid, "project", project, "app", app, "elapsed", now.Sub(since).Round(time.Millisecond))
	}
}

// setApp records a tracked job's application once its spec is known.
func (c *Client) setApp(cid, app string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j := c.jobs[cid]; j != nil {
		j.App = app
	}
	if h := c.ctl.held[cid]; h != nil {
		h.app = app
	}
}

func (c *Client) untrack(cid string) {
	c.mu.Lock()
	delete(c.jobs, cid)
	c.mu.Unlock()
}
