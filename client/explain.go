package client

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/wire"
)

// Bounds of the explain log, per project: the latest queries and jobs
// seen; summaries cover the last explainWindow.
const (
	explainQueries = 20
	explainJobs    = 50
	explainWindow  = 5 * time.Minute
)

// QueryNote is one index query the client made for a project.
type QueryNote struct {
	At    time.Time `json:"at"`
	Query string    `json:"query"`
	Found int       `json:"found"`           // entries served
	Error string    `json:"error,omitempty"` // "" when it was answered (empty or not)
}

// JobNote is a job the index served the client and what the client made
// of it.
type JobNote struct {
	Job  string    `json:"job"`
	App  string    `json:"app,omitempty"` // "" until its spec is read
	Seen time.Time `json:"seen"`          // first served
	At   time.Time `json:"at"`            // of the latest decision
	Age  float64   `json:"age_s"`         // seconds from At to the explanation
	// Decision is the latest: "served" (not tried yet), "skipped"
	// (passed over unclaimed, see Reason), "claimed", "lost" (another
	// client claimed it), "claim failed", then for a job claimed "done",
	// "failed" (ran, result not delivered) or "released" (see Reason).
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"` // wire.SkipReason's words
	Detail   string `json:"detail,omitempty"` // the error, if any
}

// ProjectExplanation is what the client did lately for one project, and
// why.
type ProjectExplanation struct {
	Name     string  `json:"name"`
	Attached bool    `json:"attached"`
	Paused   bool    `json:"paused"`
	Share    float64 `json:"share"`
	Debt     float64 `json:"debt_s"`
	Backoff  float64 `json:"backoff_s"` // seconds left
	Query    string  `json:"query"`
	// Summary is one line on the last explainWindow, e.g. "found 12 jobs
	// in 3 queries in the last 5 min: skipped 12: application not allowed
	// (app burn) ×12".
	Summary string      `json:"summary"`
	Queries []QueryNote `json:"queries"` // newest first
	Jobs    []JobNote   `json:"jobs"`    // newest decision first
}

// Explanation is the client's explain document: per project it knows,
// what it queried and what it decided about each job it saw.
type Explanation struct {
	At       time.Time            `json:"at"`
	Paused   bool                 `json:"paused"`
	Projects []ProjectExplanation `json:"projects"`
}

// explainLog is the bounded record behind Explain, under Client.mu.
type explainLog struct {
	projects map[string]*projectLog
}

type projectLog struct {
	queries []QueryNote // oldest first
	jobs    []*JobNote  // oldest decision first
}

func (l *explainLog) project(name string) *projectLog {
	if l.projects == nil {
		l.projects = map[string]*projectLog{}
	}
	p := l.projects[name]
	if p == nil {
		p = &projectLog{}
		l.projects[name] = p
	}
	return p
}

// job returns the note of a job, moved to the newest, made if new.
func (p *projectLog) job(cid string, now time.Time) *JobNote {
	i := slices.IndexFunc(p.jobs, func(j *JobNote) bool { return j.Job == cid })
	var j *JobNote
	if i >= 0 {
		j = p.jobs[i]
		p.jobs = slices.Delete(p.jobs, i, i+1)
	} else {
		j = &JobNote{Job: cid, Seen: now, Decision: "served"}
		if len(p.jobs) >= explainJobs {
			p.jobs = slices.Delete(p.jobs, 0, 1)
		}
	}
	j.At = now
	p.jobs = append(p.jobs, j)
	return j
}

// app is the application of a job noted, "" if unknown.
func (l *explainLog) app(project, cid string) string {
	for _, j := range l.project(project).jobs {
		if j.Job == cid {
			return j.App
		}
	}
	return ""
}

// decide records a decision about a job.
func (l *explainLog) decide(project, cid string, now time.Time, decision, reason, detail string) {
	j := l.project(project).job(cid, now)
	j.Decision, j.Reason, j.Detail = decision, reason, detail
}

// noteQuery records a query of the project and the entries it found.
func (c *Client) noteQuery(project string, found []wire.IndexHit, err error) {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.exp.project(project)
	q := QueryNote{At: now, Query: c.queries[project], Found: len(found)}
	if err != nil && !errors.Is(err, indexclient.ErrNoJob) {
		q.Error = err.Error()
	}
	if len(p.queries) >= explainQueries {
		p.queries = slices.Delete(p.queries, 0, 1)
	}
	p.queries = append(p.queries, q)
	for _, h := range found {
		p.job(jobName(h.Job), now)
	}
}

// noteSeen records the application of a job whose spec was read.
func (c *Client) noteSeen(project string, key []byte, app string) {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exp.project(project).job(jobName(key), now).App = app
}

// noteSkip records a job passed over unclaimed, and why.
func (c *Client) noteSkip(project string, key []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exp.decide(project, jobName(key), c.cfg.Now(), "skipped", decisionReason(err), errText(err))
}

// noteClaim records a claim's outcome: claimed, lost, or failed.
func (c *Client) noteClaim(project string, key []byte, err error) {
	d := "claimed"
	switch {
	case errors.Is(err, errStopping):
		d = "served"
	case errors.Is(err, claimclient.ErrLost):
		d = "lost"
	case err != nil:
		d = "claim failed"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exp.decide(project, jobName(key), c.cfg.Now(), d, "", errText(err))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Explain returns what the client did lately for each project it knows
// and why: its queries, the jobs it saw and what it decided, and a
// one-line summary.
func (c *Client) Explain() Explanation {
	st := c.Status()
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	ex := Explanation{At: now, Paused: c.ctl.paused, Projects: []ProjectExplanation{}}
	for _, ps := range st.Projects {
		p := c.exp.project(ps.Name)
		pe := ProjectExplanation{Name: ps.Name, Attached: ps.Attached, Paused: c.ctl.paused, Share: ps.Share,
			Debt: ps.Debt, Backoff: ps.Backoff, Query: c.queries[ps.Name],
			Queries: make([]QueryNote, 0, len(p.queries)), Jobs: make([]JobNote, 0, len(p.jobs))}
		for i := len(p.queries) - 1; i >= 0; i-- {
			pe.Queries = append(pe.Queries, p.queries[i])
		}
		for i := len(p.jobs) - 1; i >= 0; i-- {
			j := *p.jobs[i]
			j.Age = now.Sub(j.At).Seconds()
			pe.Jobs = append(pe.Jobs, j)
		}
		pe.Summary = summarize(pe, now)
		ex.Projects = append(ex.Projects, pe)
	}
	return ex
}

// summarize is a project's one-line summary of the last explainWindow.
func summarize(pe ProjectExplanation, now time.Time) string {
	var state []string
	switch {
	case !pe.Attached:
		state = append(state, "detached")
	case pe.Paused:
		state = append(state, "paused")
	case pe.Backoff > 0:
		state = append(state, fmt.Sprintf("backing off %s", time.Duration(pe.Backoff*float64(time.Second)).Round(time.Second)))
	}
	since := now.Add(-explainWindow)
	queries, failed, lastErr := 0, 0, ""
	for _, q := range pe.Queries {
		if q.At.Before(since) {
			continue
		}
		queries++
		if q.Error != "" {
			failed++
			if lastErr == "" {
				lastErr = q.Error
			}
		}
	}
	const window = "in the last 5 min" // explainWindow
	var line string
	if queries == 0 {
		line = "no query " + window
	} else {
		line = jobsLine(pe.Jobs, since, queries, window)
		if failed > 0 {
			line += fmt.Sprintf("; %d queries failed (latest: %s)", failed, lastErr)
		}
	}
	if len(state) > 0 {
		line = strings.Join(state, ", ") + "; " + line
	}
	return line
}

// jobsLine counts the decisions about the jobs seen since: "found 12 jobs
// in 3 queries in the last 5 min: took 1, skipped 11: application not
// allowed (app burn) ×11".
func jobsLine(jobs []JobNote, since time.Time, queries int, window string) string {
	found, took := 0, 0
	skips := map[string]int{}
	other := map[string]int{}
	for _, j := range jobs {
		if j.Seen.Before(since) {
			continue
		}
		found++
		switch j.Decision {
		case "skipped":
			k := j.Reason
			if j.App != "" {
				k += fmt.Sprintf(" (app %s)", j.App)
			}
			skips[k]++
		case "claimed", "done", "failed", "released":
			took++
		default:
			other[j.Decision]++
		}
	}
	if found == 0 {
		return fmt.Sprintf("%d %s %s found no job", queries, plural(queries, "query", "queries"), window)
	}
	line := fmt.Sprintf("found %d %s in %d %s %s: took %d", found, plural(found, "job", "jobs"), queries, plural(queries, "query", "queries"), window, took)
	if n := total(skips); n > 0 {
		line += fmt.Sprintf(", skipped %d: %s", n, counts(skips))
	}
	if len(other) > 0 {
		line += ", " + counts(other)
	}
	return line
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func total(m map[string]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}

// counts renders counts by key, most first: "a ×3, b ×1".
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
