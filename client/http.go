package client

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/overlay"
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

// Handler serves the client's local HTTP API: GET /status (the Status as
// JSON) and GET /metrics (Prometheus: the client's counters and claim
// latency histogram, its overlay endpoint's and up_build_info labelled
// with version); 404 elsewhere.
func (c *Client) Handler(version string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(overlay.BuildInfo(version))
	c.registerMetrics(reg)
	gather := prometheus.Gatherers{reg, c.cfg.Agent.Endpoint().Metrics().Registry}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(c.Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
	return mux
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
	for _, p := range c.cfg.Projects {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "up_client_backoff_seconds", Help: "Seconds left before the project is asked for work again (0: not backing off).",
			ConstLabels: prometheus.Labels{"project": p.Name},
		}, func() float64 { return c.Status().Backoff[p.Name] }))
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "up_client_debt_seconds", Help: "The project's debt in CPU seconds (positive: it is owed time).",
			ConstLabels: prometheus.Labels{"project": p.Name},
		}, func() float64 { return c.Status().Debts[p.Name] }))
	}
}
