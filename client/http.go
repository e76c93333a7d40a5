package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/web"
)

// countQuery counts an index query by its result: found (n entries),
// empty, or error.
func (c *Client) countQuery(n int, err error) {
	res := "found"
	switch {
	case errors.Is(err, indexclient.ErrNoJob) || (err == nil && n == 0):
		res = "empty"
	case err != nil:
		res = "error"
	}
	c.mu.Lock()
	if c.queryCount == nil {
		c.queryCount = map[string]int{}
	}
	c.queryCount[res]++
	c.mu.Unlock()
}

// Handler serves the client's local HTTP API: GET / (the client's web
// page), GET /status (the Status as
// JSON), GET /metrics (Prometheus: the client's counters and claim
// latency histogram, its overlay endpoint's and up_build_info labelled
// with version), and the everyday controls (see apiRoutes); 404
// elsewhere. It checks no caller: wrap it in web.Guard.
func (c *Client) Handler(version string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(overlay.BuildInfo(version))
	c.registerMetrics(reg)
	gather := prometheus.Gatherers{reg, c.cfg.Agent.Endpoint().Metrics().Registry}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, c.Status()) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
	c.apiRoutes(mux)
	mux.Handle("GET /{$}", page())
	web.Mount(mux)
	return mux
}

// apiRoutes serves the everyday controls and explanations:
//
//	GET  /api/explain  the Explanation
//	GET  /api/history  the History
//	GET  /api/credit   the CreditReport: receipts from the overlay, verified and summed
//	POST /api/pause    Pause; answers the Controls
//	POST /api/resume   Resume; answers the Controls
//	POST /api/attach   {"project": "NAME"} or "NAME:SHARE", or with "share": SHARE (default 100): Attach
//	POST /api/detach   {"project": NAME}: Detach
//
// A refused action answers 400 (404 for an unknown project, 500 when the
// control file cannot be written) with {"error": why}.
func (c *Client) apiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/explain", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, c.Explain()) })
	mux.HandleFunc("GET /api/history", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, c.History()) })
	mux.HandleFunc("GET /api/credit", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, c.Credit(r.Context())) })
	action := func(path string, do func(req actionRequest) error) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			var req actionRequest
			if r.ContentLength != 0 {
				dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&req); err != nil {
					writeJSON(w, http.StatusBadRequest, apiError{fmt.Sprintf("%s: want a JSON body {\"project\": NAME}: %v", path, err)})
					return
				}
			}
			if err := do(req); err != nil {
				code := http.StatusBadRequest
				switch {
				case errors.Is(err, ErrUnknownProject):
					code = http.StatusNotFound
				case errors.Is(err, errNotKept):
					code = http.StatusInternalServerError
				}
				writeJSON(w, code, apiError{err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, c.Controls())
		})
	}
	action("/api/pause", func(actionRequest) error { return c.Pause() })
	action("/api/resume", func(actionRequest) error { return c.Resume() })
	action("/api/attach", func(r actionRequest) error {
		p, err := r.project()
		if err != nil {
			return err
		}
		return c.Attach(p)
	})
	action("/api/detach", func(r actionRequest) error { return c.Detach(r.Project) })
}

// actionRequest is the body of an action: the project, for attach
// "NAME" or "NAME:SHARE" (as --project takes it), or Share given apart.
type actionRequest struct {
	Project string  `json:"project"`
	Share   float64 `json:"share"`
}

// DefaultShare is the share of a project attached without one, as
// --project NAME gives.
const DefaultShare = 100

// project is the project an attach request names.
func (r actionRequest) project() (Project, error) {
	p := Project{Name: r.Project, Share: r.Share}
	if i := strings.LastIndexByte(r.Project, ':'); i > 0 {
		v, err := strconv.ParseFloat(r.Project[i+1:], 64)
		if err != nil || r.Share != 0 {
			return p, fmt.Errorf("project %q: want NAME or NAME:SHARE, and no share apart", r.Project)
		}
		return Project{Name: r.Project[:i], Share: v}, nil // Attach checks the share
	}
	if p.Share == 0 {
		p.Share = DefaultShare
	}
	return p, nil
}

// apiError is the body of a refused API request.
type apiError struct {
	Error string `json:"error"`
}

// writeJSON answers v as indented JSON with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// registerMetrics registers the client's metrics in reg; each is read from
// the client's counters at scrape time.
func (c *Client) registerMetrics(reg prometheus.Registerer) {
	locked := func(f func() float64) func() float64 {
		return func() float64 {
			c.mu.Lock()
			defer c.mu.Unlock()
			return f()
		}
	}
	counter := func(name, help, label, value string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: name, Help: help, ConstLabels: prometheus.Labels{label: value},
		}, f))
	}
	const jobs = "up_client_jobs_total"
	const jobsHelp = "Jobs by outcome: claimed, done (result submitted), failed, released (given back, failed or not)."
	counter(jobs, jobsHelp, "outcome", "claimed", func() float64 { return float64(c.claimer.Stats().Won) })
	counter(jobs, jobsHelp, "outcome", "done", locked(func() float64 { return float64(c.done) }))
	counter(jobs, jobsHelp, "outcome", "failed", locked(func() float64 { return float64(c.failed) }))
	counter(jobs, jobsHelp, "outcome", "released", locked(func() float64 { return float64(c.released) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_client_jobs_running", Help: "Jobs claimed and not yet submitted or released.",
	}, locked(func() float64 { return float64(len(c.jobs)) })))
	const claims = "up_client_claims_total"
	const claimsHelp = "Claim attempts by outcome: won, lost (another client had it), unknown (no node held it), failed."
	for _, o := range []struct {
		name string
		get  func() int
	}{
		{"won", func() int { return c.claimer.Stats().Won }},
		{"lost", func() int { return c.claimer.Stats().Lost }},
		{"unknown", func() int { return c.claimer.Stats().Unknown }},
		{"failed", func() int { return c.claimer.Stats().Failed }},
	} {
		counter(claims, claimsHelp, "outcome", o.name, func() float64 { return float64(o.get()) })
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "up_client_claim_lookups_total", Help: "DHT lookups of a job's nodes made to claim it.",
	}, func() float64 { return float64(c.claimer.Stats().Lookups) }))
	if c.claimHist != nil {
		reg.MustRegister(c.claimHist) // up_client_claim_seconds: won claims' durations
	}
	for _, res := range []string{"found", "empty", "error"} {
		counter("up_client_queries_total", "Index queries by result: found (entries served), empty, error.",
			"result", res, locked(func() float64 { return float64(c.queryCount[res]) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_client_paused", Help: "1 while the client is paused (claims no job), else 0.",
	}, locked(func() float64 {
		if c.ctl.paused {
			return 1
		}
		return 0
	})))
	reg.MustRegister(projectCollector{c})
}

// projectCollector exports the per-project gauges of every project the
// client knows, those attached at run time included.
type projectCollector struct{ c *Client }

var (
	backoffDesc = prometheus.NewDesc("up_client_backoff_seconds",
		"Seconds left before the project is asked for work again (0: not backing off).", []string{"project"}, nil)
	debtDesc = prometheus.NewDesc("up_client_debt_seconds",
		"The project's debt in CPU seconds (positive: it is owed time).", []string{"project"}, nil)
	attachedDesc = prometheus.NewDesc("up_client_project_attached",
		"1 while the client takes the project's jobs, 0 once detached.", []string{"project"}, nil)
)

// Describe sends the gauges' descriptions.
func (projectCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- backoffDesc
	ch <- debtDesc
	ch <- attachedDesc
}

// Collect sends each project's backoff, debt and attachment.
func (pc projectCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range pc.c.Status().Projects {
		attached := 0.0
		if p.Attached {
			attached = 1
		}
		ch <- prometheus.MustNewConstMetric(backoffDesc, prometheus.GaugeValue, p.Backoff, p.Name)
		ch <- prometheus.MustNewConstMetric(debtDesc, prometheus.GaugeValue, p.Debt, p.Name)
		ch <- prometheus.MustNewConstMetric(attachedDesc, prometheus.GaugeValue, attached, p.Name)
	}
}
