package claimnet

import (
	"context"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
)

// nearRule is the confirm's rule, shared by confirms and claim
// certificates: near reports whether a replying node is among the job's
// closest in d's view (its r + claim.NearExtra nearest to pos not marked
// dead; every
// node while the routing table is still filling, claim.CanJudge, upMS and
// warmupMS in ms), and need is the quorum of grants or acceptances that
// view asks for.
func nearRule(d *dht.DHT, pos keyspace.Pos, upMS, warmupMS int64) (near func(node string) bool, need int) {
	r := d.Replication()
	// The nodes this one knows to be down (marked dead by a failed probe
	// or sync) are left out: under churn the routing table keeps the
	// closest nodes that left, and counting them shrank the live near set
	// below a quorum (the confirms of the real churn run were refused
	// "too few grants from near nodes" by the thousand).
	view := d.NearestUnmarked(pos, r+claim.NearExtra)
	judge := claim.CanJudge(d.RoutingTableSize(), r, upMS, warmupMS)
	near = func(node string) bool {
		if !judge {
			return true // the routing table is still filling: no ground to refuse
		}
		for _, p := range view {
			if string(p) == node {
				return true
			}
		}
		return false
	}
	return near, claim.Quorum(min(r, len(view)))
}

// certNearRule is nearRule for a claim certificate checked after the fact
// (the proof of a claimed state a sync or a certify brings): an acceptor
// counts as near when it is among the job's r + claim.NearExtra nearest
// peers this node knows or lately knew (dht.NearestSeen: the routing
// table, those marked dead included, and those that left it within
// dht.Config.DepartedKeep), among the r + claim.NearExtra nearest not
// marked dead, or no farther from the job than the farthest of the first
// list. A certificate's acceptors were live and near when they accepted;
// under churn some leave afterwards, and a node that restarted since
// never knew them: judging by who it knows refused honest certificates
// (the 128-node churn run's writers kept claimed jobs listed, each serve
// a lost claim for some client). The distance covers them; what it lets
// in is bounded by the account rule the caller applies (every acceptance
// of a distinct node certificate, ProofChecker.Check): a forger needs q
// certified accounts whose positions it ground near the job, which is q
// colluding nodes — beyond f, as for a live confirm. (A radius alone,
// without that rule, let one forger's made-up peers, their positions
// signed by its single account, pass: testnet/bench
// TestBehaviourForgeGrants.)
func certNearRule(d *dht.DHT, pos keyspace.Pos, upMS, warmupMS int64) (near func(node string) bool, need int) {
	r := d.Replication()
	n := r + claim.NearExtra
	live := d.NearestUnmarked(pos, n)
	all := d.NearestSeen(pos, n)
	judge := claim.CanJudge(d.RoutingTableSize(), r, upMS, warmupMS)
	var radius keyspace.Pos
	bounded := len(all) == n
	if bounded {
		radius = keyspace.Distance(keyspace.PeerPos([]byte(all[n-1])), pos)
	}
	near = func(node string) bool {
		if !judge {
			return true // the routing table is still filling: no ground to refuse
		}
		if slices.Contains(all, peer.ID(node)) || slices.Contains(live, peer.ID(node)) {
			return true
		}
		return bounded && keyspace.Compare(keyspace.Distance(keyspace.PeerPos([]byte(node)), pos), radius) <= 0
	}
	return near, claim.Quorum(min(r, len(all)))
}

// probeBudget bounds the probes of one judgement (probeNear), in all.
const probeBudget = 2 * time.Second

// farOf returns the nodes statements name that are not near (at most
// wire.MaxReplies: the decoder bounds them).
func farOf(stmts []claim.Statement, near func(node string) bool) []peer.ID {
	var far []peer.ID
	for _, st := range stmts {
		if !near(string(st.Node)) {
			far = append(far, peer.ID(st.Node))
		}
	}
	return far
}

// farReplies is farOf for a confirm's replies.
func farReplies(replies []claim.Reply, near func(node string) bool) []peer.ID {
	var far []peer.ID
	for _, r := range replies {
		if !near(r.Node) {
			far = append(far, peer.ID(r.Node))
		}
	}
	return far
}

// probeNear dials the named nodes d does not know, then probes the nodes
// it takes to be nearest pos and not known down (dht.NearestLive: a
// connected peer counts as alive without an RPC, one not connected is
// dialled), marking dead those that do not answer, and reports whether
// that changed the r + claim.NearExtra nearest not marked dead. A confirm or a certificate names the nodes that were the job's
// live nearest when they granted or accepted; a node that still counts
// nodes that were down then (nothing told it they left) placed the
// farthest of them outside its r + 3 nearest. With half the nodes down
// (the 128-node churn run at 30 s lifetimes) replicas refused honest
// confirms ("3 of 4 replies granted by the job's closest nodes") and the
// job's closest refused honest certificates as forged, kept the job ready
// and listed, and sent clients to a claimed job until a republish round
// (issue 24). Called only when some node named is outside the view, it
// takes out only nodes that do not answer, so a forger gains nothing it
// could not by a live confirm; its refused statements cost a probe of at
// most the nodes ahead of those it names, each marked dead for its backoff
// once it fails.
func probeNear(d *dht.DHT, pos keyspace.Pos, named []peer.ID) bool {
	n := d.Replication() + claim.NearExtra
	before := d.NearestUnmarked(pos, n)
	ctx, cancel := context.WithTimeout(context.Background(), probeBudget)
	defer cancel()
	// A named node this one does not know (it joined or restarted since
	// this node last heard of it) is dialled: an admitted node enters the
	// routing table on its hello, and is then judged like any other.
	for _, p := range named {
		if p == d.ID() || slices.Contains(d.NearestLocal(pos, 4*n), p) || !d.IsAlive(ctx, p) {
			continue
		}
		if a, ok := d.Endpoint().Admission().Get(p); ok && a.Role() == certs.RoleNode {
			_, _ = d.AddToRoutingTable(p) // as node.Join does: kad-dht's own add waits for identify
		}
	}
	d.NearestLive(ctx, pos, n)
	return !slices.Equal(before, d.NearestUnmarked(pos, n))
}
