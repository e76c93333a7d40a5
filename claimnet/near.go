package claimnet

import (
	"context"
	"slices"
	"time"

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
// peers in d's routing table, those marked dead included, or among the
// r + claim.NearExtra nearest not marked dead. A certificate's acceptors
// were live and near when they accepted; under churn some of them leave
// afterwards, and judging them by who is live now refused the certificate
// at nodes that saw them leave, so the claim could not spread and the job
// was split between claimed and ready replicas until the claim's deadline.
// A list, not a radius: a peer ID can be ground to land near a job, so
// only peers that joined (and so are, or were, in the routing table)
// count — a radius let a forger's certificate of made-up acceptors pass
// (testnet/bench TestBehaviourForgeGrants).
func certNearRule(d *dht.DHT, pos keyspace.Pos, upMS, warmupMS int64) (near func(node string) bool, need int) {
	r := d.Replication()
	live := d.NearestUnmarked(pos, r+claim.NearExtra)
	all := d.NearestLocal(pos, r+claim.NearExtra)
	judge := claim.CanJudge(d.RoutingTableSize(), r, upMS, warmupMS)
	near = func(node string) bool {
		if !judge {
			return true // the routing table is still filling: no ground to refuse
		}
		for _, p := range all {
			if string(p) == node {
				return true
			}
		}
		for _, p := range live {
			if string(p) == node {
				return true
			}
		}
		return false
	}
	return near, claim.Quorum(min(r, len(all)))
}

// probeBudget bounds the probes of one judgement (probeNear), in all.
const probeBudget = 2 * time.Second

// anyFar reports whether a node some statement names is not near.
func anyFar(stmts []claim.Statement, near func(node string) bool) bool {
	for _, st := range stmts {
		if !near(string(st.Node)) {
			return true
		}
	}
	return false
}

// anyFarReply is anyFar for a confirm's replies.
func anyFarReply(replies []claim.Reply, near func(node string) bool) bool {
	for _, r := range replies {
		if !near(r.Node) {
			return true
		}
	}
	return false
}

// probeNear probes the nodes d takes to be nearest pos and not known down
// (dht.NearestLive: a connected peer counts as alive without an RPC, one
// not connected is dialled), marking dead those that do not answer, and
// reports whether that changed the r + claim.NearExtra nearest not marked
// dead. A confirm or a certificate names the nodes that were the job's
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
func probeNear(d *dht.DHT, pos keyspace.Pos) bool {
	n := d.Replication() + claim.NearExtra
	before := d.NearestUnmarked(pos, n)
	ctx, cancel := context.WithTimeout(context.Background(), probeBudget)
	defer cancel()
	d.NearestLive(ctx, pos, n)
	return !slices.Equal(before, d.NearestUnmarked(pos, n))
}
