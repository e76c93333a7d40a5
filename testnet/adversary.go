package testnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// Byzantine behaviours a node of an adversarial network shows.
const (
	// BehaviourDeny: the claim service denies every claim with a reply it
	// signs properly, and refuses every confirm.
	BehaviourDeny = "deny"
	// BehaviourDrop: job/store acknowledges every job (a project's store
	// as held by r replicas) and keeps none.
	BehaviourDrop = "drop"
	// BehaviourForgeStates: every ForgeInterval the node sends the other
	// replicas of the jobs it holds forged claimed, finished, collected
	// and ready states over job/sync, with no valid proof.
	BehaviourForgeStates = "forge-states"
	// BehaviourWithhold: the node stores results and never serves them
	// (result/get answers no result).
	BehaviourWithhold = "withhold"
)

// Behaviours are the behaviours Options.Behaviours may name.
var Behaviours = []string{BehaviourDeny, BehaviourDrop, BehaviourForgeStates, BehaviourWithhold}

// ForgeInterval is how often a forge-states node sends its forgeries.
const ForgeInterval = time.Second

// forgesPerRound bounds the jobs a forge-states node forges per round.
const forgesPerRound = 4

// JumpAfter is how long after the network starts (on the harness clock) a
// jumping node's clock jumps an hour ahead.
const JumpAfter = 5 * time.Second

// Adversary chooses the misbehaving nodes of a network (seeded).
type Adversary struct {
	// Byzantine is the fraction of nodes that misbehave, each with one of
	// Behaviours (dealt in turn).
	Byzantine  float64
	Behaviours []string
	// Skewed is the fraction of nodes whose clock is off by a seeded
	// offset uniform in ±Skew; Jump the fraction (others) whose clock
	// jumps an hour ahead JumpAfter into the run.
	Skewed float64
	Skew   time.Duration
	Jump   float64
}

// ValidateAdversary reports the first bad adversarial option, in one line.
func (o Adversary) ValidateAdversary() error {
	frac := func(name string, f float64) error {
		if !(f >= 0 && f <= 1) {
			return fmt.Errorf("testnet: %s fraction %v out of [0, 1]", name, f)
		}
		return nil
	}
	if err := errors.Join(frac("byzantine", o.Byzantine), frac("skewed", o.Skewed), frac("jump", o.Jump)); err != nil {
		return err
	}
	for _, b := range o.Behaviours {
		if !slices.Contains(Behaviours, b) {
			return fmt.Errorf("testnet: behaviour %q unknown (want one of %s)", b, strings.Join(Behaviours, ", "))
		}
	}
	switch {
	case o.Byzantine > 0 && len(o.Behaviours) == 0:
		return errors.New("testnet: Byzantine nodes with no behaviour")
	case o.Skew < 0:
		return fmt.Errorf("testnet: skew %v is negative", o.Skew)
	case o.Skewed+o.Jump > 1:
		return fmt.Errorf("testnet: skewed %v and jumping %v clocks are more than all nodes", o.Skewed, o.Jump)
	}
	return nil
}

// adversary is who misbehaves in a network: chosen once, seeded.
type adversary struct {
	behaviour []string        // per node; "" honest
	offset    []time.Duration // per node: its clock's skew
	jumps     []bool          // per node: its clock jumps an hour ahead
	start     time.Time       // harness time at Start
}

// chooseAdversary picks round(Byzantine × Nodes) Byzantine nodes, the
// behaviours dealt in turn, and, among all nodes, round(Skewed × Nodes)
// skewed clocks (uniform in ±Skew) and round(Jump × Nodes) jumping ones.
func chooseAdversary(o Options) *adversary {
	a := &adversary{behaviour: make([]string, o.Nodes), offset: make([]time.Duration, o.Nodes), jumps: make([]bool, o.Nodes),
		start: o.Now()}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0xad7e5a21))
	byz := int(o.Byzantine*float64(o.Nodes) + 0.5)
	for k, i := range rng.Perm(o.Nodes)[:byz] {
		a.behaviour[i] = o.Behaviours[k%len(o.Behaviours)]
	}
	skewed, jump := int(o.Skewed*float64(o.Nodes)+0.5), int(o.Jump*float64(o.Nodes)+0.5)
	for k, i := range rng.Perm(o.Nodes)[:skewed+jump] {
		if k < skewed {
			if o.Skew > 0 {
				a.offset[i] = time.Duration(rng.Int64N(int64(2*o.Skew)+1)) - o.Skew
			}
		} else {
			a.jumps[i] = true
		}
	}
	return a
}

// clock returns node i's clock over the harness clock now.
func (a *adversary) clock(i int, now func() time.Time) func() time.Time {
	off, jumps, at := a.offset[i], a.jumps[i], a.start.Add(JumpAfter)
	if off == 0 && !jumps {
		return now
	}
	return func() time.Time {
		t := now()
		if jumps && !t.Before(at) {
			t = t.Add(time.Hour)
		}
		return t.Add(off)
	}
}

// Byzantine returns the indexes of the Byzantine nodes and their
// behaviours (none on an honest network).
func (n *Network) Byzantine() map[int]string {
	out := map[int]string{}
	if n.adv != nil {
		for i, b := range n.adv.behaviour {
			if b != "" {
				out[i] = b
			}
		}
	}
	return out
}

// ClockOffset returns node i's clock skew and whether it jumps.
func (n *Network) ClockOffset(i int) (time.Duration, bool) {
	if n.adv == nil {
		return 0, false
	}
	return n.adv.offset[i], n.adv.jumps[i]
}

// corrupt replaces node i's handlers for its behaviour, from outside the
// node: a Byzantine node is a real node with some services swapped.
func (n *Network) corrupt(i int, nd *node.Node, now func() time.Time) {
	if n.adv == nil {
		return
	}
	switch n.adv.behaviour[i] {
	case BehaviourDeny:
		denyClaims(nd, now)
	case BehaviourDrop:
		dropStores(nd, n.opts.DHT.Replication)
	case BehaviourWithhold:
		withholdResults(nd)
	case BehaviourForgeStates:
		go n.forgeLoop(i, nd, now)
	}
}

// denyClaims makes nd deny every claim, signed properly, and refuse every
// confirm.
func denyClaims(nd *node.Node, now func() time.Time) {
	id, ep := nd.Identity(), nd.Endpoint()
	clients := []certs.Role{certs.RoleClient}
	ep.Handle(wire.ProtoClaim, 1024, clients, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.ClaimRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		signed, err := claim.Sign(claim.Statement{Kind: claim.Denied, Job: req.Job, Client: []byte(from.Identity.PublicKey),
			Node: []byte(ep.ID()), At: now().UnixMilli()}, id.Cert.Raw, id.Position.Marshal(), id.Key, id.PeerKey.Sign)
		if err != nil {
			return nil, err
		}
		return &wire.ClaimResponse{Reply: signed}, nil
	})
	ep.Handle(wire.ProtoConfirm, 1<<20, clients, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, errors.New("denied"))
	})
}

// dropStores makes nd acknowledge every stored job and keep none; a
// project's store is acknowledged as held by r replicas.
func dropStores(nd *node.Node, r int) {
	if r == 0 {
		r = 5
	}
	roles := []certs.Role{certs.RoleProject, certs.RoleNode}
	nd.Endpoint().Handle(wire.ProtoJobStore, wire.MaxJobFrame, roles, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.StoreRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		resp := &wire.StoreResponse{Results: make([]wire.StoreResult, len(req.Jobs))}
		for i := range resp.Results {
			resp.Results[i].Status = wire.StatusOK
			if req.Replicate {
				resp.Results[i].Acks = uint16(r)
			}
		}
		return resp, nil
	})
}

// withholdResults makes nd answer result/get with no result.
func withholdResults(nd *node.Node) {
	roles := []certs.Role{certs.RoleProject, certs.RoleNode}
	nd.Endpoint().Handle(wire.ProtoResultGet, 64<<10, roles, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.ResultGetRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		return &wire.ResultGetResponse{Results: make([][]byte, len(req.Keys))}, nil
	})
}

// forgeries are the states a forge-states node sends, none with a proof:
// a claim by a made-up client, a result no client made, a collection the
// project never signed, and a tombstone ending a claim that never was.
func forgeries(at int64) []job.State {
	client := bytes.Repeat([]byte{0xf0}, 32)
	return []job.State{
		{Phase: job.Claimed, Client: client, Start: at, Deadline: at + int64(time.Hour/time.Millisecond)},
		{Phase: job.Finished, Client: client, At: at, Result: bytes.Repeat([]byte{0xf1}, 32)},
		{Phase: job.Collected, At: at},
		{Phase: job.Ready, Client: client, Start: at},
	}
}

// forgeLoop sends node i's forgeries until node i is killed.
func (n *Network) forgeLoop(i int, nd *node.Node, now func() time.Time) {
	tick := time.NewTicker(ForgeInterval)
	defer tick.Stop()
	round := 0
	for range tick.C {
		if n.Node(i) != nd {
			return
		}
		keys := nd.Pool().Keys()
		if len(keys) == 0 {
			continue
		}
		r := max(n.opts.DHT.Replication, 5)
		for k := range min(forgesPerRound, len(keys)) {
			key := keys[(round*forgesPerRound+k)%len(keys)]
			st := forgeries(now().UnixMilli())[(round+k)%4]
			for _, to := range n.TrueClosest(key, r) {
				if to == nd.ID() {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req := &wire.SyncRequest{Items: []wire.SyncItem{{Key: key, State: st}}}
				var resp wire.SyncResponse
				_ = nd.Endpoint().Call(ctx, to, wire.ProtoJobSync, req, wire.MaxJobFrame, &resp)
				cancel()
			}
		}
		round++
	}
}
