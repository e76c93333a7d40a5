package testnet

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	dto "github.com/prometheus/client_model/go"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/project"
)

// EachReceived calls f with every counter of RPCs a node received: its
// own protocols by name, the DHT's as "dht:<type>", and the sender's role
// where the counter has one.
func EachReceived(m *overlay.Metrics, f func(proto, role string, v float64)) {
	mfs, err := m.Registry.Gather()
	if err != nil {
		return
	}
	for _, mf := range mfs {
		var proto func(*dto.Metric) string
		switch mf.GetName() {
		case "up_rpc_received_total":
			proto = func(m *dto.Metric) string { return label(m, "protocol") }
		case "up_dht_requests_received_total":
			proto = func(m *dto.Metric) string { return "dht:" + label(m, "type") }
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			f(proto(m), label(m, "role"), m.GetCounter().GetValue())
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// WireBytes is what the nodes sent plus what they received from parties
// that are not nodes (the project and clients have no counters): every
// byte on the wire once.
func (n *Network) WireBytes() int64 {
	nodes := map[peer.ID]bool{}
	for _, nd := range n.Live() {
		nodes[nd.ID()] = true
	}
	var sum int64
	for _, c := range n.bw {
		sum += c.GetBandwidthTotals().TotalOut
		for p, st := range c.GetBandwidthByPeer() {
			if !nodes[p] {
				sum += st.TotalIn
			}
		}
	}
	return sum
}

// Unharvested describes, for a run that timed out (the bench, a
// scenario), where each job the
// ledger still holds as submitted stands on every live node: its replica
// state, where the node's writer placed its entries, and which index nodes
// hold its finished entry. At most max jobs are described, those with the
// fewest faulty nodes (Byzantine, or a jumped clock) among their r closest
// first: on an adversarial network the jobs beyond f are expected to stall.
func (net *Network) Unharvested(ledger *project.Ledger, projectName string, max int) string {
	rows, err := ledger.DB().Query(`SELECT cid FROM jobs WHERE state = 'submitted'`)
	if err != nil {
		return fmt.Sprintf("ledger: %v", err)
	}
	var cids []string
	for rows.Next() {
		var s string
		if rows.Scan(&s) == nil {
			cids = append(cids, s)
		}
	}
	rows.Close()
	count := net.faultyCounter(net.replication())
	faulty := make(map[string]int, len(cids))
	for _, s := range cids {
		faulty[s] = count(s)
	}
	slices.SortStableFunc(cids, func(a, b string) int { return cmp.Compare(faulty[a], faulty[b]) })
	cids = cids[:min(max, len(cids))]
	finished := job.FinishedKeyword(projectName)
	var b strings.Builder
	for _, s := range cids {
		c, err := cid.Decode(s)
		if err != nil {
			continue
		}
		key := c.Bytes()
		fmt.Fprintf(&b, "job %s (%d faulty among its %d closest; closest first: %v):\n", s, faulty[s], net.replication(), net.JobClosest(key, 8))
		var signed []byte
		if err := ledger.DB().QueryRow(`SELECT s.signed FROM jobs j JOIN specs s ON s.job = j.id WHERE substr(j.cid, -16) = substr(?1, -16) AND j.cid = ?1`, s).Scan(&signed); err == nil {
			if _, spec, err := job.Decode(signed); err == nil {
				for _, kw := range spec.Keywords {
					for _, nd := range net.Live() {
						if e, ok := nd.Index().Entry(kw, key); ok {
							fmt.Fprintf(&b, "  entry %q at %s: held until %d (now %d), served %d\n", kw, nd.Name(), e.Held, time.Now().UnixMilli(), e.Served)
						}
					}
				}
			}
		}
		for _, nd := range net.Live() {
			st, held := nd.Pool().State(key)
			placed := nd.Writer().Placed(key)
			has := nd.Index().Has(finished, key)
			if !held && len(placed) == 0 && !has {
				continue
			}
			stored, proof, _ := nd.Pool().Stored(key)
			pr, _ := job.DecodeProof(proof)
			off, jumps := net.ClockOffset(net.Index(nd.ID()))
			rank, since := nd.Writer().ListingRank(keyspace.KeyPos(key), key)
			who := "peer …" + nd.ID().String()[len(nd.ID().String())-6:]
			if beh, ok := net.Byzantine()[net.Index(nd.ID())]; ok {
				who += ", byzantine " + beh
			}
			fmt.Fprintf(&b, "  %s (%s; clock %v, jumps %v): held %v state %s client %x, stored %s start %d deadline %d (certificate %v, signature %v), writer placed %v (rank %d, backup since %d), holds finished entry %v, claims %+v\n",
				nd.Name(), who, off, jumps, held, st.Phase, st.Client[:min(4, len(st.Client))], stored.Phase, stored.Start, stored.Deadline,
				len(pr.Claim) > 0, len(pr.Sig) > 0, placed, rank, since, has, nd.Claims().Counts())
		}
	}
	return b.String()
}
