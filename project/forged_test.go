package project_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// TestHarvestRefusesAlteredCopy: two jobs, each finished with a result
// every replica stores. For job A the first node the project asks alters
// its stored copy; for job B every node does. Harvest refuses the altered
// copies and names their nodes; for A it takes the next node's honest
// copy, stores it and tells the nodes "collected"; for B nothing reaches
// the ledger, the job stays uncollected and the error wraps
// result.ErrForged.
func TestHarvestRefusesAlteredCopy(t *testing.T) {
	f := startFlow(t, 8, 76)
	ctx := context.Background()
	file := "app: hashchain\nargs: [\"10\", \"{i}\"]\nkeywords: [lhc]\nsweep:\n  i: {from: 1, to: 2}\n"
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), "two.yaml", nil); err != nil || rep.Submitted != 2 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	cids := ledgerCIDs(t, f.ledger.DB())
	if len(cids) != 2 {
		t.Fatalf("ledger holds %d jobs, want 2", len(cids))
	}
	// A client runs both (it returns its output without running the
	// application: the test is about what the nodes do with it).
	w, err := f.net.NewAgent(ctx, certs.RoleClient, "honest")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cl := claimclient.NewClaimer(w.Endpoint(), w.DHT(), f.clock.Now, 0)
	keys := map[string][]byte{}
	for _, s := range cids {
		c, err := cid.Decode(s)
		if err != nil {
			t.Fatal(err)
		}
		keys[s] = c.Bytes()
		claim, err := cl.ClaimAt(ctx, c.Bytes(), f.net.PlaceOf(c.Bytes()), nil)
		if err != nil {
			t.Fatalf("job %s: claim: %v", s, err)
		}
		env, err := result.Seal(result.Inner{Job: c.Bytes(), ClientCert: w.Identity().Cert.Raw, Output: []byte("honest " + s), At: f.clock.Now().UnixMilli()},
			w.Identity().Key, f.proj.Agent().Identity().ResultPublicKey(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := cl.SubmitResult(ctx, claim, env.Encode()); err != nil || n == 0 {
			t.Fatalf("job %s: result stored on %d nodes: %v", s, n, err)
		}
	}
	f.net.FlushAll(ctx)
	// The nodes the project will ask, in its order: the finished entry's
	// replicas.
	replicas := map[string][]peer.ID{}
	if _, err := f.proj.Agent().Index().Harvest(ctx, job.FinishedKeyword("lhc"), 256, func(hits []wire.IndexHit) error {
		for _, h := range hits {
			c, err := cid.Cast(h.Job)
			if err != nil {
				return err
			}
			for _, r := range h.Replicas {
				replicas[c.String()] = append(replicas[c.String()], peer.ID(r))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a, b := cids[0], cids[1]
	if len(replicas[a]) < 2 || len(replicas[b]) == 0 {
		t.Fatalf("finished entries list replicas %v", replicas)
	}
	// A node alters the sealed bytes it stores (re-signing is beyond it).
	alter := func(s string, n peer.ID) {
		t.Helper()
		nd := f.net.Node(f.net.Index(n))
		raw, ok := nd.Pool().Result(keys[s])
		if !ok {
			t.Fatalf("job %s: node %s holds no result", s, n)
		}
		env, err := result.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		env.Sealed[len(env.Sealed)/2] ^= 1
		if err := nd.Store().Put(store.Key("result", keys[s]), env.Encode()); err != nil {
			t.Fatal(err)
		}
		if now, _ := nd.Pool().Result(keys[s]); string(now) == string(raw) {
			t.Fatalf("job %s: node %s still serves the original result", s, n)
		}
	}
	forger := replicas[a][0]
	alter(a, forger)
	// Every node holding B's result alters it: the listed replicas and any
	// other holder (a spare of the claim, a handoff), which the project
	// asks when the listed ones fail.
	alteredB := 0
	for _, nd := range f.net.Live() {
		if _, ok := nd.Pool().Result(keys[b]); ok {
			alter(b, nd.ID())
			alteredB++
		}
	}

	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("harvest: %+v", rep)
	if rep.Recorded != 1 || rep.Refused != 1 || rep.RefusedCopies < 1+len(replicas[b]) || rep.RefusedCopies > 1+alteredB || rep.Collected != 1 {
		t.Fatalf("harvest %+v: want A recorded and collected, B refused, %d to %d copies refused", rep, 1+len(replicas[b]), 1+alteredB)
	}
	var namedForger, refusedB bool
	for _, e := range rep.Errors {
		msg := e.Error()
		if !errors.Is(e, result.ErrForged) {
			t.Errorf("error %q does not wrap result.ErrForged", msg)
		}
		switch {
		case strings.HasPrefix(msg, "job "+a+": ") && strings.Contains(msg, "copy from node "+forger.String()+" refused"):
			namedForger = true
		case strings.HasPrefix(msg, "job "+b+": ") && strings.Contains(msg, "no good result from any of"):
			refusedB = true
		default:
			t.Errorf("unexpected error %q", msg)
		}
	}
	if !namedForger || !refusedB {
		t.Fatalf("errors %v: want A's altered copy refused naming node %s, and B refused", rep.Errors, forger)
	}
	var out []byte
	var state string
	if err := f.ledger.DB().QueryRow(`SELECT r.output, j.state FROM results r JOIN jobs j ON j.id = r.job WHERE r.cid = ?`, a).Scan(&out, &state); err != nil {
		t.Fatalf("job %s: no result in the ledger: %v", a, err)
	}
	if string(out) != "honest "+a || state != project.StateCollected {
		t.Fatalf("job %s: ledger holds %q, state %s; want the honest output, collected", a, out, state)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE cid = '`+b+`'`); n != 0 {
		t.Fatalf("job %s: the forged result reached the ledger", b)
	}
	if st, err := f.ledger.Known(b); err != nil || st != project.StateSubmitted {
		t.Fatalf("job %s: ledger state %q %v, want submitted (not harvested, not collected)", b, st, err)
	}
}
