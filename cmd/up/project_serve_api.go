package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/up-pool/up/project"
	"github.com/up-pool/up/web"
)

// projectAPI serves the project page's JSON endpoints from a ledger
// ('up project serve').
type projectAPI struct {
	l          *project.Ledger
	name       string
	now        func() time.Time
	stuckAfter time.Duration
	cache      *reportCache
	// describer answers /api/describe; nil when serve has no network
	// (no --bootstrap).
	describer describer
}

// describer describes a job or unit of the project ('up project
// describe').
type describer func(ctx context.Context, id string) (*project.Description, error)

// describeTimeout bounds one describe from the page.
const describeTimeout = 30 * time.Second

func newProjectAPI(l *project.Ledger, name string, stuckAfter time.Duration) *projectAPI {
	return &projectAPI{l: l, name: name, now: time.Now, stuckAfter: stuckAfter, cache: newReportCache(time.Now)}
}

// Bounds of the endpoints' lists.
const (
	defaultTopN    = 20  // credit, stuck: rows by default
	maxTopN        = 100 // credit, stuck: rows at most
	defaultPage    = 50  // results: rows per page by default
	defaultBuckets = 60  // series: time buckets by default
)

// handler is the page, its assets and the API, behind web.Guard (token
// "" for none).
func (a *projectAPI) handler(token string) http.Handler {
	mux := http.NewServeMux()
	web.Mount(mux)
	mux.Handle("GET /{$}", web.Page("U.P. project "+a.name, projectPageBody, projectPageScript))
	for path, f := range map[string]func(*http.Request) (any, error){
		"/api/summary":    a.summary,
		"/api/series":     a.series,
		"/api/latency":    func(*http.Request) (any, error) { return a.l.Latency(0) },
		"/api/validation": func(*http.Request) (any, error) { return a.l.Validation() },
		"/api/credit":     a.credit,
		"/api/stuck":      a.stuck,
		"/api/results":    a.results,
	} {
		mux.Handle("GET "+path, a.report(f))
	}
	mux.HandleFunc("GET /api/results/{job}", a.download)
	mux.HandleFunc("GET /api/describe", a.describe)
	return web.Guard(mux, token)
}

// badParam is a query parameter a report refuses: 400.
type badParam struct{ error }

// report serves f's answer as JSON, from the cache while fresh (keyed by
// path and query); a badParam is 400, any other error 500.
func (a *projectAPI) report(f func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := a.cache.get(r.URL.Path+"?"+r.URL.RawQuery, func() ([]byte, error) {
			v, err := f(r)
			if err != nil {
				return nil, err
			}
			return json.Marshal(v)
		})
		var bad badParam
		switch {
		case errors.As(err, &bad):
			http.Error(w, err.Error(), http.StatusBadRequest)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(append(body, '\n'))
		}
	})
}

// intParam is the query parameter name of r as an integer in [lo, hi],
// def when absent; a badParam naming it otherwise.
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, badParam{fmt.Errorf("%s=%q: want an integer from %d to %d", name, s, lo, hi)}
	}
	return n, nil
}

// projectSummary is /api/summary: the project's name and the ledger's
// counts.
type projectSummary struct {
	Project string `json:"project"`
	project.Summary
}

func (a *projectAPI) summary(*http.Request) (any, error) {
	s, err := a.l.Summary(a.now())
	return projectSummary{Project: a.name, Summary: s}, err
}

// series answers /api/series?buckets=N&span=DURATION: the timeline from
// the first batch (or span before now, when later) to now.
func (a *projectAPI) series(r *http.Request) (any, error) {
	n, err := intParam(r, "buckets", defaultBuckets, 1, project.MaxBuckets)
	if err != nil {
		return nil, err
	}
	now := a.now()
	from, err := a.l.Span(now)
	if err != nil {
		return nil, err
	}
	if s := r.URL.Query().Get("span"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, badParam{fmt.Errorf("span=%q: want a positive duration such as 1h", s)}
		}
		if now.Add(-d).After(from) {
			from = now.Add(-d)
		}
	}
	return a.l.Timeline(from, now, n)
}

func (a *projectAPI) credit(r *http.Request) (any, error) {
	n, err := intParam(r, "limit", defaultTopN, 0, maxTopN)
	if err != nil {
		return nil, err
	}
	return a.l.Leaderboard(n)
}

func (a *projectAPI) stuck(r *http.Request) (any, error) {
	n, err := intParam(r, "limit", defaultTopN, 0, maxTopN)
	if err != nil {
		return nil, err
	}
	return a.l.StuckUnits(a.now(), a.stuckAfter, n)
}

func (a *projectAPI) results(r *http.Request) (any, error) {
	limit, err := intParam(r, "limit", defaultPage, 1, project.MaxResultsPage)
	if err != nil {
		return nil, err
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		return nil, err
	}
	return a.l.ResultsPage(offset, limit)
}

// download answers /api/results/{job}[?file=NAME]: the result's standard
// output (unitNNNNNN-JOB.out, as 'up project results' names it), or the
// output file NAME its job named, as an attachment.
func (a *projectAPI) download(w http.ResponseWriter, r *http.Request) {
	job := r.PathValue("job")
	res, unit, err := a.l.ResultOf(job)
	if errors.Is(err, project.ErrNoResult) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	stdout, files, err := unpackResult(res)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body, name := stdout, fmt.Sprintf("unit%06d-%s.out", unit, res.CID)
	if f := r.URL.Query().Get("file"); f != "" {
		b, ok := files[f]
		if !ok {
			http.Error(w, fmt.Sprintf("job %s names no output file %q", job, f), http.StatusNotFound)
			return
		}
		body, name = b, f
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}

// describe answers /api/describe?id=JOB|UNIT with Project.Describe's
// description; 501 when serve was started without --bootstrap.
func (a *projectAPI) describe(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		http.Error(w, "describe: want ?id=JOB or ?id=UNIT", http.StatusBadRequest)
		return
	}
	if a.describer == nil {
		http.Error(w, "describe needs the network: start 'up project serve' with --bootstrap", http.StatusNotImplemented)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), describeTimeout)
	defer cancel()
	d, err := a.describer(ctx, id)
	switch {
	case errors.Is(err, project.ErrNotDescribed):
		http.Error(w, fmt.Sprintf("describe: %v", err), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("describe %s: %v", id, err), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d)
}

// Freshness of a cached report: at least reportFresh, and
// reportCostFactor times what computing it took, so the reports of a
// large ledger cost the serving process about 1/reportCostFactor of a
// core at most, however many pages poll them. reportCacheSize bounds the
// answers kept (one per path and query); a full cache starts afresh.
const (
	reportFresh      = time.Second
	reportCostFactor = 10
	reportCacheSize  = 64
)

// reportCache keeps the reports' latest answers (JSON).
type reportCache struct {
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]*cachedReport
}

// cachedReport is one report's answer; its mu is held while computing
// it, so concurrent requests compute it once.
type cachedReport struct {
	mu    sync.Mutex
	body  []byte
	until time.Time
}

func newReportCache(now func() time.Time) *reportCache {
	return &reportCache{now: now, entries: map[string]*cachedReport{}}
}

// get returns the answer of key, computing it with f when it is missing
// or stale; errors are not kept.
func (c *reportCache) get(key string, f func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		if len(c.entries) >= reportCacheSize {
			clear(c.entries)
		}
		e = &cachedReport{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	start := c.now()
	if e.body != nil && start.Before(e.until) {
		return e.body, nil
	}
	body, err := f()
	if err != nil {
		return nil, err
	}
	end := c.now()
	e.body, e.until = body, end.Add(max(reportFresh, reportCostFactor*end.Sub(start)))
	return body, nil
}
