package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// indexDiag describes, for a run that left jobs unclaimed or unharvested,
// where the keyword's index entries are, which node is truly nearest the
// keyword's region, and where each client's region view sends its
// queries (and whether it has marked an entry-holding node dead).
func (rr *realRun) indexDiag(ctx context.Context) string {
	var b strings.Builder
	name := map[peer.ID]string{}
	var holders []peer.ID
	now := time.Now().UnixMilli()
	for _, nd := range rr.net.Live() {
		name[nd.ID()] = nd.Name()
		l := nd.Index().Len()
		if l == 0 {
			continue
		}
		holders = append(holders, nd.ID())
		var listed, held, expired, selected int
		q := rr.workers[0].query
		page, perr := nd.Index().Query(&wire.IndexQueryRequest{Query: q, Keyword: scenarioProject, N: 1<<16 - 1, Page: true})
		if perr == nil {
			listed = len(page.Hits)
			for _, h := range page.Hits {
				if e, ok := nd.Index().Entry(scenarioProject, h.Job); ok && e.Held > now {
					held++
				}
			}
		}
		for kw, n := range nd.Index().Keywords() {
			if kw != scenarioProject {
				fmt.Fprintf(&b, "  %s holds %d entries under %q\n", nd.Name(), n, kw)
			}
		}
		sel, serr := nd.Index().Query(&wire.IndexQueryRequest{Query: q, Keyword: scenarioProject, N: 1})
		if serr == nil {
			selected = len(sel.Hits)
		}
		expired = l - listed
		fmt.Fprintf(&b, "  index entries on %s: %d; %d live under %q for %q (%v), %d of them quarantined, %d expired or not matching; a select now returns %d (%v)\n",
			nd.Name(), l, listed, scenarioProject, q, perr, held, expired, selected, serr)
	}
	nameOf := func(p peer.ID) string {
		if n, ok := name[p]; ok {
			return n
		}
		return p.String()
	}
	region := keyspace.IndexRegion(scenarioProject, rr.workers[0].a.Index().Regions().Bits())
	var ids []peer.ID
	for _, nd := range rr.net.Live() {
		ids = append(ids, nd.ID())
	}
	dht.SortPeers(region.First(), ids)
	var near []string
	for _, p := range ids[:min(3, len(ids))] {
		near = append(near, nameOf(p))
	}
	fmt.Fprintf(&b, "  nearest the region of %q: %s\n", scenarioProject, strings.Join(near, ", "))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i, w := range rr.workers {
		_, at, err := w.a.Index().Regions().Target(ctx, scenarioProject)
		var dead []string
		for _, h := range holders {
			if w.a.DHT().IsMarkedDead(h) {
				dead = append(dead, nameOf(h))
			}
		}
		fmt.Fprintf(&b, "  client %d: queries go to %s (err %v); entry holders it marked dead: %v\n", i+1, nameOf(at), err, dead)
	}
	rr.claimViewDiag(ctx, &b, nameOf)
	return b.String()
}

// claimViewDiag describes, for the first job the ledger holds as
// submitted, whom each client would ask to claim it (its lookup, cached
// or not) and which of the job's true closest it has marked dead, and
// whom each of the true closest counts as near the job (the confirm's
// rule).
func (rr *realRun) claimViewDiag(ctx context.Context, b *strings.Builder, nameOf func(peer.ID) string) {
	var s string
	var listing []byte
	if err := rr.ledger.DB().QueryRow(`SELECT j.cid, s.listing FROM jobs j JOIN specs s ON s.job = j.id WHERE j.state = 'submitted' LIMIT 1`).Scan(&s, &listing); err != nil {
		return
	}
	_, l, err := job.DecodeListing(listing)
	if err != nil {
		return
	}
	key := l.PlaceKey() // the job's nodes are its place's
	names := func(ps []peer.ID) string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = nameOf(p)
		}
		return strings.Join(out, " ")
	}
	closest := rr.net.TrueClosest(key, 5)
	fmt.Fprintf(b, "  job %s: true closest %s\n", s, names(closest))
	for i, w := range rr.workers {
		ps, err := w.a.DHT().ClosestN(ctx, key, 8)
		var dead []peer.ID
		for _, p := range closest {
			if w.a.DHT().IsMarkedDead(p) {
				dead = append(dead, p)
			}
		}
		fmt.Fprintf(b, "  client %d would ask %s (err %v); marks dead %s\n", i+1, names(ps), err, names(dead))
	}
	if len(rr.workers) > 0 {
		w := rr.workers[0]
		probe := claimclient.NewClaimer(w.a.Endpoint(), w.a.DHT(), w.a.Now, 0)
		cl, err := probe.ClaimAt(ctx, l.Job, key, nil)
		if err == nil {
			fmt.Fprintf(b, "  a claim by client 1 now: won, asked %s\n", names(cl.Nodes))
			probe.Release(ctx, cl, wire.SkipUnknown)
		} else {
			fmt.Fprintf(b, "  a claim by client 1 now: %v\n", err)
		}
	}
	for _, nd := range rr.net.Live() {
		if slices.Contains(closest, nd.ID()) {
			fmt.Fprintf(b, "  %s counts near: %s\n", nd.Name(), names(nd.DHT().NearestLocal(keyspace.KeyPos(key), 7)))
		}
	}
}
