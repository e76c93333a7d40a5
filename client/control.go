package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client/sched"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
)

// ProjectControl is a project as the controls see it: its name, its
// resource share and whether the client takes its jobs.
type ProjectControl struct {
	Name     string  `json:"name"`
	Share    float64 `json:"share"`
	Attached bool    `json:"attached"`
}

// Controls are the volunteer's everyday controls: whether the client is
// paused, and its projects, attached or detached. In Config.ControlFile
// they hold only the projects attached or detached at run time.
type Controls struct {
	Paused   bool             `json:"paused"`
	Projects []ProjectControl `json:"projects"`
}

// ErrUnknownProject reports a project the client was never attached to.
var ErrUnknownProject = errors.New("unknown project")

// errStopping reports a claim not started because the client is paused or
// detached from the job's project.
var errStopping = errors.New("client paused or detached from the project")

// errNotKept reports a change of the controls not made because the
// control file could not be written.
var errNotKept = errors.New("controls not changed: the control file cannot be written")

// errDetached is the cause of a held job's context cancelled by Detach
// before the job ran: it is released.
var errDetached = errors.New("detached from the project")

// controls is the client's state of its controls, under Client.mu.
type controls struct {
	paused   bool
	projects map[string]*ProjectControl // every project known: Config's and attached at run time
	changed  map[string]bool            // attached or detached at run time: what the file holds
	claiming map[string]int             // claims under way, by project
	idle     *sync.Cond                 // on Client.mu: broadcast when a claim ends
	wake     chan struct{}              // closed (and replaced) on Resume and Attach
	held     map[string]*heldJob        // by job CID: jobs claimed and not ended
}

// newControls are the controls of cfg's projects, with the file's
// run-time changes applied over them: a project the file names is
// attached or detached as it says, whatever Config.Projects say.
func newControls(cfg Config, mu *sync.Mutex) (controls, error) {
	ct := controls{projects: map[string]*ProjectControl{}, changed: map[string]bool{}, claiming: map[string]int{},
		idle: sync.NewCond(mu), wake: make(chan struct{}), held: map[string]*heldJob{}}
	for _, p := range cfg.Projects {
		ct.projects[p.Name] = &ProjectControl{Name: p.Name, Share: p.Share, Attached: true}
	}
	saved, err := loadControls(cfg.ControlFile)
	if err != nil {
		return ct, err
	}
	ct.paused = saved.Paused
	for _, p := range saved.Projects {
		if err := checkProject(Project{Name: p.Name, Share: p.Share}); err != nil {
			return ct, fmt.Errorf("control file %s: %w", cfg.ControlFile, err)
		}
		ct.projects[p.Name] = &ProjectControl{Name: p.Name, Share: p.Share, Attached: p.Attached}
		ct.changed[p.Name] = true
	}
	return ct, nil
}

// loadControls reads a control file; none (or path "") is no change.
func loadControls(path string) (Controls, error) {
	var c Controls
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("control file: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("control file %s: %w", path, err)
	}
	return c, nil
}

// saveLocked writes the controls' run-time changes to the control file,
// as they would be with paused and p (nil: none) applied. Called with
// c.mu held, before the change is applied: a change that cannot be kept
// is not made.
func (c *Client) saveLocked(paused bool, p *ProjectControl) error {
	if c.cfg.ControlFile == "" {
		return nil
	}
	doc := Controls{Paused: paused, Projects: []ProjectControl{}}
	for name := range c.ctl.changed {
		if p == nil || name != p.Name {
			doc.Projects = append(doc.Projects, *c.ctl.projects[name])
		}
	}
	if p != nil {
		doc.Projects = append(doc.Projects, *p)
	}
	sort.Slice(doc.Projects, func(i, k int) bool { return doc.Projects[i].Name < doc.Projects[k].Name })
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := keystore.WriteFileAtomic(c.cfg.ControlFile, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("%w: %w", errNotKept, err)
	}
	return nil
}

// checkProject checks a project's name (a certificate's name that is an
// index keyword) and share.
func checkProject(p Project) error {
	switch {
	case p.Name == "" || len(p.Name) > certs.MaxNameLen:
		return fmt.Errorf("project name %q: want 1 to %d bytes", p.Name, certs.MaxNameLen)
	case job.ValidateKeyword(p.Name) != nil || strings.ContainsAny(p.Name, ":=,"):
		return fmt.Errorf("project name %q: not a keyword", p.Name)
	case !(p.Share > 0) || math.IsInf(p.Share, 1):
		return fmt.Errorf("project %q: share %v is not positive", p.Name, p.Share)
	}
	return nil
}

// Controls returns the client's controls: paused, and every project it
// knows, attached or not, by name.
func (c *Client) Controls() Controls {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Controls{Paused: c.ctl.paused, Projects: []ProjectControl{}}
	for _, p := range c.ctl.projects {
		out.Projects = append(out.Projects, *p)
	}
	sort.Slice(out.Projects, func(i, k int) bool { return out.Projects[i].Name < out.Projects[k].Name })
	return out
}

// Pause stops the client claiming jobs: once Pause returns no claim is
// under way and none starts until Resume. The jobs it holds (claimed,
// fetching their inputs or running) go on to their results. The pause is
// kept in Config.ControlFile, so a restarted client stays paused.
func (c *Client) Pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.saveLocked(true, nil); err != nil {
		return err
	}
	c.ctl.paused = true
	for c.claimingLocked("") > 0 {
		c.ctl.idle.Wait()
	}
	c.releaseKeptLocked("", "claimed beside another, the client paused before running it")
	return nil
}

// Resume undoes Pause: the client claims jobs again at once.
func (c *Client) Resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.saveLocked(false, nil); err != nil {
		return err
	}
	c.ctl.paused = false
	c.kickLocked()
	return nil
}

// Attach attaches a project at run time, or re-attaches a detached one
// with share p.Share: its jobs are taken from now on, and after a restart
// whatever Config.Projects say (Config.ControlFile keeps it). Its query
// is p.Query, or QueryFor the machine; its applications must be allowed
// by the Runner, or its jobs are skipped ("application not allowed").
func (c *Client) Attach(p Project) error {
	if err := checkProject(p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := &ProjectControl{Name: p.Name, Share: p.Share, Attached: true}
	if err := c.saveLocked(c.ctl.paused, pc); err != nil {
		return err
	}
	if _, known := c.ctl.projects[p.Name]; known {
		if err := c.sched.SetShare(p.Name, p.Share); err != nil {
			return err
		}
	} else if err := c.sched.Add(sched.Project{Name: p.Name, Share: p.Share}); err != nil {
		return err
	}
	if p.Query != "" || c.queries[p.Name] == "" {
		c.queries[p.Name] = cmp.Or(p.Query, QueryFor(p.Name, c.cfg.Attributes))
	}
	c.ctl.projects[p.Name], c.ctl.changed[p.Name] = pc, true
	delete(c.backoff, p.Name)
	c.kickLocked()
	c.log.Info("project attached", "project", p.Name, "share", p.Share)
	return nil
}

// Detach stops the client taking the project's jobs: once Detach returns
// no claim of the project is under way, its entries served and not
// claimed are dropped, and its jobs claimed and not running yet (fetching
// their spec or inputs) are released (wire.SkipStopping); its running
// jobs go on to their results. Config.ControlFile keeps it detached after
// a restart, until Attach.
func (c *Client) Detach(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.ctl.projects[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownProject, name)
	}
	pc := &ProjectControl{Name: name, Share: p.Share}
	if err := c.saveLocked(c.ctl.paused, pc); err != nil {
		return err
	}
	c.ctl.projects[name], c.ctl.changed[name] = pc, true
	c.pending = slices.DeleteFunc(c.pending, func(ph pendingHit) bool { return ph.project == name })
	for cid, h := range c.ctl.held {
		if j := c.jobs[cid]; h.project == name && (j == nil || j.State == "claimed" || j.State == "fetching") {
			// Its context ended, process releases it with SkipStopping.
			h.cancel(errDetached)
		}
	}
	for c.claimingLocked(name) > 0 {
		c.ctl.idle.Wait()
	}
	c.releaseKeptLocked(name, "claimed beside another, detached from its project before running it")
	c.log.Info("project detached", "project", name)
	return nil
}

// claimingLocked counts the claims under way of project ("": all).
func (c *Client) claimingLocked(project string) int {
	if project != "" {
		return c.ctl.claiming[project]
	}
	n := 0
	for _, k := range c.ctl.claiming {
		n += k
	}
	return n
}

// runnableLocked reports whether the client takes the project's jobs now:
// not paused, and attached.
func (c *Client) runnableLocked(project string) bool {
	p := c.ctl.projects[project]
	return !c.ctl.paused && p != nil && p.Attached
}

// beginClaim counts a claim of the project about to start, or refuses
// it (errStopping) when the client is paused or detached from it; a claim
// begun is ended by endClaim.
func (c *Client) beginClaim(project string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.runnableLocked(project) {
		return errStopping
	}
	c.ctl.claiming[project]++
	return nil
}

func (c *Client) endClaim(project string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctl.claiming[project]--; c.ctl.claiming[project] <= 0 {
		delete(c.ctl.claiming, project)
	}
	c.ctl.idle.Broadcast()
}

// kickLocked wakes the workers waiting for a project to work for.
func (c *Client) kickLocked() {
	close(c.ctl.wake)
	c.ctl.wake = make(chan struct{})
}

// nap waits d, or until ctx ends or the controls change (Resume, Attach).
func (c *Client) nap(ctx context.Context, d time.Duration) {
	c.mu.Lock()
	wake := c.ctl.wake
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}

// query is the project's index query.
func (c *Client) query(project string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries[project]
}

// projectStatusLocked lists the projects for Status, by name.
func (c *Client) projectStatusLocked(debts map[string]float64, backoff map[string]float64) []ProjectStatus {
	out := []ProjectStatus{}
	for _, p := range c.ctl.projects {
		out = append(out, ProjectStatus{Name: p.Name, Attached: p.Attached, Share: p.Share,
			Debt: debts[p.Name], Backoff: backoff[p.Name]})
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// ProjectStatus is a project in the client's Status.
type ProjectStatus struct {
	Name     string  `json:"name"`
	Attached bool    `json:"attached"`
	Share    float64 `json:"share"`
	Debt     float64 `json:"debt_s"`    // CPU seconds owed (0 while it has no work)
	Backoff  float64 `json:"backoff_s"` // seconds left before it is asked for work again
}
