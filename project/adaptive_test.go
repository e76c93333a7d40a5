package project_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
)

// testPolicy is adaptive replication with a short record, for a quick
// test: trusted after 3 valid results with none invalid among the latest
// 5; a quarter of a trusted client's units spot-checked; a fixed seed, so
// the draw is the same on every run.
var testPolicy = project.AdaptivePolicy{MinValid: 3, Window: 5, SpotCheck: 0.25, Seed: []byte("adaptive test seed")}

// TestAdaptiveReplication follows one client, "trusty", through adaptive
// replication: new, each of its results gets a second copy (replicated)
// until it has the record; with trust disabled (a threshold above its
// record: the control) every unit is still replicated; trusted, its
// results stand alone but for the spot-checked units, as the seeded draw
// says; caught lying on a spot-checked unit, it earns no credit for it,
// the honest copy is canonical, and its next units are replicated again.
func TestAdaptiveReplication(t *testing.T) {
	f := startFlow(t, 8, 84)
	trustyAgent, trusty := f.agentWorker(t, "trusty")
	checker := f.worker(t, "checker")

	// 1. New: every result replicated; the checker's copies agree.
	f.adaptiveRound(t, "a", 3, trusty, checker, testPolicy, project.AdaptiveReport{Replicated: 3})
	// Control: trust disabled, trusty (now 3 valid) is still replicated.
	off := testPolicy
	off.MinValid, off.Window = 1000, 1000
	f.adaptiveRound(t, "control", 3, trusty, checker, off, project.AdaptiveReport{Replicated: 3})

	// 2. Trusted (6 valid): single copies, the drawn units spot-checked:
	// under the test's seed, 5 of these 12 (p = 0.25).
	ids := f.adaptiveRound(t, "b", 12, trusty, checker, testPolicy, project.AdaptiveReport{Single: 7, SpotChecked: 5})
	drawn := 0
	for _, id := range ids {
		if project.SpotCheck(testPolicy.Seed, id, testPolicy.SpotCheck) {
			drawn++
		}
	}
	if drawn != 5 {
		t.Fatalf("the draw over the units %v picks %d, the harvest spot-checked 5", ids, drawn)
	}
	if c := f.credit(t)["trusty"]; c.Valid != 18 || c.Invalid != 0 {
		t.Fatalf("trusty's credit %+v, want 18 valid (single copies earn theirs)", c)
	}

	// 3. Trusted, it lies on a unit the harvest spot-checks (p = 1 here).
	f.submitAdaptive(t, "lie", 1)
	f.lieAs(t, trustyAgent, "42\n")
	always := testPolicy
	always.SpotCheck = 1
	f.harvestWant(t, "lie", always, project.AdaptiveReport{SpotChecked: 1}, 1)
	f.runN(t, checker, 1)
	f.harvestWant(t, "lie, checked", testPolicy, project.AdaptiveReport{}, 1) // disagree: a third copy
	f.runN(t, f.worker(t, "checker2"), 1)
	f.harvestWant(t, "lie, decided", testPolicy, project.AdaptiveReport{}, 0)
	if c := f.credit(t)["trusty"]; c.Valid != 18 || c.Invalid != 1 {
		t.Fatalf("trusty's credit %+v after its lie, want still 18 valid and 1 invalid", c)
	}
	var canonical string
	if err := f.ledger.DB().QueryRow(`SELECT r.output FROM units u JOIN batches b ON b.id = u.batch JOIN results r ON r.cid = u.canonical
		WHERE b.source = 'lie.yaml'`).Scan(&canonical); err != nil || canonical == "42\n" {
		t.Fatalf("canonical result of the lied unit %q, %v", canonical, err)
	}
	// Its trust is lost: its next honest results are replicated.
	f.adaptiveRound(t, "after", 2, trusty, checker, testPolicy, project.AdaptiveReport{Replicated: 2})

	// The ledger says why, per unit.
	st, err := f.ledger.Stats(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{project.AdaptiveReplicated: 8, project.AdaptiveSingle: 7, project.AdaptiveSpotCheck: 6}
	if fmt.Sprint(st.Adaptive) != fmt.Sprint(want) {
		t.Fatalf("ledger adaptive decisions %v, want %v", st.Adaptive, want)
	}
}

// adaptiveRound submits n adaptive units (source name.yaml), has worker
// run them all, harvests under pol wanting the decisions want, has
// checker run the extra copies and harvests again, wanting every unit
// valid; it returns the units' ledger ids.
func (f *flow) adaptiveRound(t *testing.T, name string, n int, worker, checker *client.Client, pol project.AdaptivePolicy, want project.AdaptiveReport) []int64 {
	t.Helper()
	ids := f.submitAdaptive(t, name, n)
	f.runN(t, worker, n)
	extra := want.SpotChecked + want.Replicated
	f.harvestWant(t, name, pol, want, extra)
	f.runN(t, checker, extra)
	f.harvestWant(t, name+", checked", pol, project.AdaptiveReport{}, 0)
	var open int
	if err := f.ledger.DB().QueryRow(`SELECT COUNT(*) FROM units u JOIN batches b ON b.id = u.batch WHERE b.source = ? AND u.status != ?`,
		name+".yaml", project.UnitValid).Scan(&open); err != nil || open != 0 {
		t.Fatalf("%s: %d units not valid, %v", name, open, err)
	}
	return ids
}

// submitAdaptive submits n adaptive hashchain units from the job file
// name.yaml and returns their ledger ids.
func (f *flow) submitAdaptive(t *testing.T, name string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	file := fmt.Sprintf("app: hashchain\nargs: [\"100\", \"%s-{i}\"]\nkeywords: [lhc]\nadaptive: true\nsweep:\n  i: {from: 1, to: %d}\n", name, n)
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), name+".yaml", nil); err != nil || rep.Submitted != n {
		t.Fatalf("%s: submit: %+v %v", name, rep, err)
	}
	f.net.FlushAll(ctx)
	rows, err := f.ledger.DB().Query(`SELECT u.id FROM units u JOIN batches b ON b.id = u.batch WHERE b.source = ? ORDER BY u.id`, name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// runN has c run jobs until it finds none, wanting n.
func (f *flow) runN(t *testing.T, c *client.Client, n int) {
	t.Helper()
	if got := f.work(t, c); got != n {
		t.Fatalf("worker ran %d jobs, want %d", got, n)
	}
	f.net.FlushAll(context.Background())
}

// harvestWant harvests under pol, wanting the adaptive decisions want and
// extra copies issued.
func (f *flow) harvestWant(t *testing.T, what string, pol project.AdaptivePolicy, want project.AdaptiveReport, extra int) {
	t.Helper()
	rep, err := f.proj.Harvest(context.Background(), f.ledger, project.HarvestOptions{Adaptive: pol}, nil)
	if err != nil || rep.Err() != nil || len(rep.Errors) > 0 {
		t.Fatalf("%s: harvest: %+v %v", what, rep, err)
	}
	if rep.Adaptive != want || rep.Extra != extra {
		t.Fatalf("%s: harvest decided %+v with %d extra copies, want %+v and %d", what, rep.Adaptive, rep.Extra, want, extra)
	}
}

// lieAs has the client of agent a claim one job of the index and return
// output without running it.
func (f *flow) lieAs(t *testing.T, a *agent.Agent, output string) {
	t.Helper()
	ctx := context.Background()
	hits, err := a.Index().Find(ctx, "lhc", 1)
	if err != nil || len(hits) == 0 {
		t.Fatalf("the liar finds no job: %v", err)
	}
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), f.clock.Now, 0)
	c, err := cl.ClaimHit(ctx, hits[0])
	if err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: c.Job, ClientCert: a.Identity().Cert.Raw, Output: []byte(output), At: f.clock.Now().UnixMilli()},
		a.Identity().Key, f.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SubmitResult(ctx, c, env.Encode()); err != nil {
		t.Fatal(err)
	}
	f.net.FlushAll(ctx)
}
