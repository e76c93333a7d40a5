package overlay

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are one party's overlay counters. Each party has its own registry,
// so many parties can live in one process.
type Metrics struct {
	Registry    *prometheus.Registry
	RPCReceived *prometheus.CounterVec // by protocol, peer role
	RPCSent     *prometheus.CounterVec // by protocol
	RPCFailed   *prometheus.CounterVec // by protocol, direction
	Refused     *prometheus.CounterVec // by protocol: requests refused for lack of admission
	Admissions  *prometheus.CounterVec // by result: admitted, refused
	Connections prometheus.Gauge

	received counterCache[[2]string] // RPCReceived by protocol, role
	sent     counterCache[string]    // RPCSent by protocol
}

// counterCache maps label values to the counters of a vector. Every RPC
// counts itself; the vector's own lookup hashes the label values and takes
// a read lock each time, where this map is read with no lock (copy on
// write: the label values in use are few).
type counterCache[K comparable] struct {
	mu sync.Mutex // held while the map is replaced
	m  atomic.Pointer[map[K]prometheus.Counter]
}

// get returns the counter for k, made by mk the first time.
func (c *counterCache[K]) get(k K, mk func() prometheus.Counter) prometheus.Counter {
	if m := c.m.Load(); m != nil {
		if ctr, ok := (*m)[k]; ok {
			return ctr
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if ctr, ok := (*old)[k]; ok {
			return ctr
		}
	}
	next := make(map[K]prometheus.Counter, 8)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	ctr := mk()
	next[k] = ctr
	c.m.Store(&next)
	return ctr
}

// countReceived counts one request of protocol pid from a peer of role.
func (m *Metrics) countReceived(pid, role string) {
	m.received.get([2]string{pid, role}, func() prometheus.Counter { return m.RPCReceived.WithLabelValues(pid, role) }).Inc()
}

// countSent counts one request of protocol pid sent.
func (m *Metrics) countSent(pid string) {
	m.sent.get(pid, func() prometheus.Counter { return m.RPCSent.WithLabelValues(pid) }).Inc()
}

// NewMetrics registers the overlay metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		RPCReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "up_rpc_received_total", Help: "Requests received, by protocol and peer role.",
		}, []string{"protocol", "role"}),
		RPCSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "up_rpc_sent_total", Help: "Requests sent, by protocol.",
		}, []string{"protocol"}),
		RPCFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "up_rpc_failed_total", Help: "Requests that failed, by protocol and direction (in, out).",
		}, []string{"protocol", "direction"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "up_rpc_refused_total", Help: "Requests refused because the peer was not admitted, by protocol.",
		}, []string{"protocol"}),
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "up_admissions_total", Help: "Hello verdicts, by result (admitted, refused).",
		}, []string{"result"}),
		Connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "up_connections", Help: "Open libp2p connections.",
		}),
	}
	m.Registry.MustRegister(m.RPCReceived, m.RPCSent, m.RPCFailed, m.Refused, m.Admissions, m.Connections,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// CounterValue reads the current value of one counter of a vector.
func CounterValue(v *prometheus.CounterVec, labels ...string) float64 {
	c, err := v.GetMetricWithLabelValues(labels...)
	if err != nil {
		return 0
	}
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// SumCounter sums every counter of a vector whose label name has the value
// (all counters when name is empty).
func SumCounter(v *prometheus.CounterVec, name, value string) float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { v.Collect(ch); close(ch) }()
	var sum float64
	for metric := range ch {
		var m dto.Metric
		if err := metric.Write(&m); err != nil {
			continue
		}
		if name != "" {
			match := false
			for _, l := range m.GetLabel() {
				if l.GetName() == name && l.GetValue() == value {
					match = true
				}
			}
			if !match {
				continue
			}
		}
		sum += m.GetCounter().GetValue()
	}
	return sum
}
