package testnet

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/up-pool/up/node"
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
	// BehaviourForgeGrants: the claim service grants every claim and
	// accepts every confirm whatever its temporary claims (equivocation,
	// signed properly with the node's own keys), and every Interval the
	// node sends a job's other replicas a claimed state of a made-up client
	// whose proof is a claim certificate of its own real acceptance plus
	// acceptances it forged: in the other replicas' names under its own
	// keys, under made-up keys certified by a made-up CA, or by made-up
	// peers whose position records its own account signed.
	BehaviourForgeGrants = "forge-grants"
	// BehaviourAlter: result/get answers every held result with its sealed
	// bytes flipped (the envelope's structure kept), and every Interval the
	// node sends a job's other replicas a finished state naming the
	// altered envelope, earlier than the true one, with the true client's
	// certificate as its proof.
	BehaviourAlter = "alter"
	// BehaviourLieNear: /up/near answers put the node itself first, then
	// the other Byzantine nodes, then made-up peer IDs ground to lie
	// nearer the asked position than any real node (kad-dht's own
	// protocol is left honest).
	BehaviourLieNear = "lie-near"
	// BehaviourReplay: the node records every job it holds as it changes
	// (signed spec, listing, each state with its proof: claims with their
	// certificates) and, once the job is collected or deleted, sends the
	// old records again: job/store of the signed spec with its old
	// ready and claimed states to every node, and the old claimed states
	// with their certificates by job/sync to the job's replicas.
	BehaviourReplay = "replay"
)

// Behaviours are the behaviours Options.Behaviours may name.
var Behaviours = []string{BehaviourDeny, BehaviourDrop, BehaviourForgeStates, BehaviourWithhold,
	BehaviourForgeGrants, BehaviourAlter, BehaviourLieNear, BehaviourReplay}

// BehaviourHelp says in a few words what each behaviour does, for the
// command line's help.
var BehaviourHelp = map[string]string{
	BehaviourDeny:        "deny every claim (signed), refuse every confirm",
	BehaviourDrop:        "acknowledge every stored job as held by r, keep none",
	BehaviourForgeStates: "send unproven claimed, finished, collected and ready states",
	BehaviourWithhold:    "store results, never serve them",
	BehaviourForgeGrants: "grant and accept every claim (equivocate); send claims proven by forged certificates",
	BehaviourAlter:       "serve results with flipped bytes; send finished states naming them",
	BehaviourLieNear:     "answer near questions with itself, Byzantine peers and made-up peers",
	BehaviourReplay:      "re-store collected jobs' signed specs and resend their old claims",
}

// ForgeInterval is how often, by default, a forging or replaying node
// acts (Adversary.Interval).
const ForgeInterval = time.Second

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
	// Interval is how often forging and replaying nodes act; default
	// ForgeInterval.
	Interval time.Duration
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
	case o.Interval < 0:
		return fmt.Errorf("testnet: forging interval %v is negative", o.Interval)
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
	interval  time.Duration   // how often forgers and replayers act

	mu     sync.Mutex
	counts map[string]int // what the Byzantine nodes did, by "behaviour/what"
}

// add counts k of what a Byzantine node did ("behaviour/what").
func (a *adversary) add(what string, k int) {
	a.mu.Lock()
	a.counts[what] += k
	a.mu.Unlock()
}

// AdversaryCounts reports what the Byzantine nodes did so far, by
// "behaviour/what": forge-grants/granted and /accepted (claims granted,
// confirms accepted), forge-grants/sent (forged certificates delivered, one
// per replica); alter/served (altered results served), alter/sent (forged
// finished states delivered); lie-near/answered (near questions lied to),
// lie-near/made-up (made-up peers given); replay/recorded (states
// recorded), replay/store-sent, replay/store-ok, replay/store-gone (replayed
// stores delivered, answered OK, refused as collected), replay/sync-sent;
// and, measured by the harness after each replayed store,
// replay/resurrected (an honest node then held the job not collected)
// with replay/resurrected-replica (one of the job's r closest). Nil on an
// honest network.
func (n *Network) AdversaryCounts() map[string]int {
	if n.adv == nil {
		return nil
	}
	n.adv.mu.Lock()
	defer n.adv.mu.Unlock()
	return maps.Clone(n.adv.counts)
}

// chooseAdversary picks round(Byzantine × Nodes) Byzantine nodes, the
// behaviours dealt in turn, and, among all nodes, round(Skewed × Nodes)
// skewed clocks (uniform in ±Skew) and round(Jump × Nodes) jumping ones.
func chooseAdversary(o Options) *adversary {
	a := &adversary{behaviour: make([]string, o.Nodes), offset: make([]time.Duration, o.Nodes), jumps: make([]bool, o.Nodes),
		start: o.Now(), interval: cmp.Or(o.Interval, ForgeInterval), counts: map[string]int{}}
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
	case BehaviourForgeGrants:
		forgeGrants(nd, now, n.adv)
		go n.forgeCertLoop(i, nd, now)
	case BehaviourAlter:
		alterResults(nd, n.adv)
		go n.alterLoop(i, nd)
	case BehaviourLieNear:
		n.lieNear(nd)
	case BehaviourReplay:
		n.startReplay(i, nd)
	}
}
