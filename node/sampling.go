package node

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/up-pool/up/certs"
)

// MaxStatusRevocations is the most revoked serial numbers /status lists;
// it gives the count of all.
const MaxStatusRevocations = 100

// Revocations are the certificates the node's revocation list revokes.
type Revocations struct {
	Count   int      `json:"count"`   // serials on the list
	Serials []string `json:"serials"` // hex, ascending, the first MaxStatusRevocations
}

// revCache is the Revocations of one list, kept until the list changes.
type revCache struct {
	rl  *certs.RevocationList
	rev Revocations
}

// revocations are rl's serials for /status, computed once per list.
func (n *Node) revocations(rl *certs.RevocationList) Revocations {
	if c := n.revs.Load(); c != nil && c.rl == rl {
		return c.rev
	}
	rev := Revocations{Serials: []string{}}
	if rl != nil {
		all := rl.Serials()
		rev.Count = len(all)
		for _, s := range all[:min(len(all), MaxStatusRevocations)] {
			rev.Serials = append(rev.Serials, fmt.Sprintf("%x", s))
		}
	}
	n.revs.Store(&revCache{rl: rl, rev: rev})
	return rev
}

// Series is the node's recent samples as GET /api/series serves them,
// aged on the node's clock.
func (n *Node) Series() Series { return n.series.Series(n.cfg.Now()) }

// Sample records a sample of the node's state now; the node's loop does
// so every Config.SeriesStep.
func (n *Node) Sample() { n.series.Add(n.cfg.Now(), n.read()) }

// read is the node's Reading now: counts its services keep, no lookup.
func (n *Node) read() Reading {
	in := n.cur()
	return Reading{
		JobsHeld:     in.pool.Len(),
		IndexEntries: in.index.Len(),
		Load:         n.lb.Load().Value(n.lb.Config().Params),
		Moves:        n.Moves(),
		Connections:  len(in.host.Network().Conns()),
		Instance:     string(in.host.ID()),
		RPC:          byLabel(in.ep.Metrics().RPCReceived, "protocol"),
	}
}

// sampleLoop records a sample every Config.SeriesStep until the node
// closes.
func (n *Node) sampleLoop() {
	t := time.NewTicker(n.cfg.SeriesStep)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.Sample()
		}
	}
}

// byLabel sums v's counters by the value of their label name.
func byLabel(v *prometheus.CounterVec, name string) map[string]float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { v.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for metric := range ch {
		var m dto.Metric
		if err := metric.Write(&m); err != nil {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}
