package project_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
)

// TestLyingClient: a unit of 2 copies; one client returns a made-up
// result. The two results disagree, the project issues a third copy, an
// honest client's result makes the quorum: the canonical result is the
// honest one and the liar earns no credit.
func TestLyingClient(t *testing.T) {
	f := startFlow(t, 8, 74)
	file := `
app: hashchain
args: ["1000", "seed"]
keywords: [lhc]
copies: 2
commit: false
`
	ctx := context.Background()
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), "one.yaml", nil); err != nil || rep.Submitted != 2 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	// The liar claims one copy and returns garbage without running it.
	f.lie(t, "liar", "42\n")
	// An honest client does the other copy.
	if n := f.work(t, f.worker(t, "honest1")); n != 1 {
		t.Fatalf("honest1 ran %d jobs", n)
	}
	f.net.FlushAll(ctx)
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || rep.Recorded != 2 || rep.Extra != 1 {
		t.Fatalf("first harvest: %+v %v (want 2 results, disagreeing: one extra copy)", rep, err)
	}
	// A second honest client does the extra copy.
	if n := f.work(t, f.worker(t, "honest2")); n != 1 {
		t.Fatalf("honest2 ran %d jobs", n)
	}
	f.net.FlushAll(ctx)
	rep, err = f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil || rep.Recorded != 1 || rep.Decided != 1 {
		t.Fatalf("second harvest: %+v %v", rep, err)
	}
	f.wantLiarCaught(t)
	var canonical []byte
	if err := f.ledger.DB().QueryRow(`SELECT r.output FROM units u JOIN results r ON r.cid = u.canonical`).Scan(&canonical); err != nil {
		t.Fatal(err)
	}
	if string(canonical) == "42\n" {
		t.Fatal("the liar's result became canonical")
	}
}

// lie has a client named name claim one job of the index and return output
// without running it.
func (f *flow) lie(t *testing.T, name, output string) {
	t.Helper()
	ctx := context.Background()
	liar, err := f.net.NewAgent(ctx, certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	defer liar.Close()
	hits, err := liar.Index().Find(ctx, "lhc", 1)
	if err != nil {
		t.Fatalf("%s finds no job: %v", name, err)
	}
	cl := claimclient.NewClaimer(liar.Endpoint(), liar.DHT(), f.clock.Now, 0)
	c, err := cl.ClaimHit(ctx, hits[0])
	if err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: c.Job, ClientCert: liar.Identity().Cert.Raw, Output: []byte(output), At: f.clock.Now().UnixMilli()},
		liar.Identity().Key, f.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SubmitResult(ctx, c, env.Encode()); err != nil {
		t.Fatal(err)
	}
}

// TestLateLiarGraded: a unit of 3 copies is decided by the first two
// honest results; the liar's result, harvested after the verdict, is
// graded against the canonical one and earns no credit.
func TestLateLiarGraded(t *testing.T) {
	f := startFlow(t, 8, 75)
	ctx := context.Background()
	file := "app: hashchain\nargs: [\"1000\", \"late\"]\nkeywords: [lhc]\ncopies: 3\ncommit: false\n"
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), "late.yaml", nil); err != nil || rep.Submitted != 3 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	for _, name := range []string{"honest1", "honest2"} {
		f.net.FlushAll(ctx)
		if ran, err := f.worker(t, name).RunOne(ctx, "lhc"); !ran || err != nil {
			t.Fatalf("%s: ran %v, %v", name, ran, err)
		}
	}
	f.net.FlushAll(ctx)
	if rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 2 || rep.Decided != 1 {
		t.Fatalf("first harvest: %+v %v (want 2 results and the unit decided)", rep, err)
	}
	f.lie(t, "liar", "42\n")
	f.net.FlushAll(ctx)
	if rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 1 {
		t.Fatalf("second harvest: %+v %v (want the late result)", rep, err)
	}
	f.wantLiarCaught(t)
}

// wantLiarCaught checks the credit of a unit decided by honest1 and
// honest2 against the liar: one valid result each for the honest, one
// invalid and none valid for the liar.
func (f *flow) wantLiarCaught(t *testing.T) {
	t.Helper()
	st, err := f.ledger.Stats(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	credit := map[string]project.Credit{}
	for _, c := range st.Credit {
		credit[c.Client] = c
	}
	if credit["liar"].Valid != 0 || credit["liar"].Invalid != 1 || credit["honest1"].Valid != 1 || credit["honest2"].Valid != 1 {
		t.Fatalf("credit %+v", st.Credit)
	}
}

// TestDoubleCopyOneCredit: a unit of 3 copies; an honest client runs one,
// then a greedy client (one that skips the client's own one-copy-per-unit
// check) claims a second and returns the right output. Its claim of the
// third is refused: on 8 nodes with r = 5 the two copies share at least
// two replicas, which see its first copy (claim.ReasonOtherCopy). On a
// network where the copies' replicas are apart it could get the third:
// its result for it is then recorded as harvest would, and the greedy
// client still earns one credit, not two: its second copy is flagged as
// a duplicate.
func TestDoubleCopyOneCredit(t *testing.T) {
	f := startFlow(t, 8, 76)
	ctx := context.Background()
	file := "app: hashchain\nargs: [\"1000\", \"twice\"]\nkeywords: [lhc]\ncopies: 3\ncommit: false\n"
	if rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), "twice.yaml", nil); err != nil || rep.Submitted != 3 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	f.net.FlushAll(ctx)
	if ran, err := f.worker(t, "honest1").RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("honest1: ran %v, %v", ran, err)
	}
	f.net.FlushAll(ctx)
	if rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 1 {
		t.Fatalf("first harvest: %+v %v", rep, err)
	}
	var output []byte
	if err := f.ledger.DB().QueryRow(`SELECT output FROM results`).Scan(&output); err != nil {
		t.Fatal(err)
	}
	greedy, err := f.net.NewAgent(ctx, certs.RoleClient, "greedy")
	if err != nil {
		t.Fatal(err)
	}
	defer greedy.Close()
	hits, err := greedy.Index().Find(ctx, "lhc", 2)
	if err != nil || len(hits) != 2 {
		t.Fatalf("greedy finds %d jobs: %v", len(hits), err)
	}
	cl := claimclient.NewClaimer(greedy.Endpoint(), greedy.DHT(), f.clock.Now, 0)
	c, err := cl.ClaimHit(ctx, hits[0])
	if err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: c.Job, ClientCert: greedy.Identity().Cert.Raw, Output: output, At: f.clock.Now().UnixMilli()},
		greedy.Identity().Key, f.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SubmitResult(ctx, c, env.Encode()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ClaimHit(ctx, hits[1]); !errors.Is(err, claimclient.ErrLost) {
		t.Fatalf("greedy's claim of a second copy: %v, want refused by the replicas that see its first", err)
	}
	f.net.FlushAll(ctx)
	if rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 1 || rep.Decided != 1 {
		t.Fatalf("second harvest: %+v %v (want greedy's result and the unit decided)", rep, err)
	}
	// The copy replicas apart could have given it: recorded as harvest
	// records a result, and validated with its unit.
	third, err := cid.Cast(hits[1].Job)
	if err != nil {
		t.Fatal(err)
	}
	var greedyKey []byte
	if err := f.ledger.DB().QueryRow(`SELECT client_key FROM results WHERE client = 'greedy'`).Scan(&greedyKey); err != nil {
		t.Fatal(err)
	}
	if err := f.ledger.RecordResults([]project.Result{{CID: third.String(), Client: "greedy", ClientKey: greedyKey,
		Output: output, At: f.clock.Now()}}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := f.ledger.Stats(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	credit := map[string]project.Credit{}
	for _, c := range st.Credit {
		credit[c.Client] = c
	}
	if g := credit["greedy"]; g.Valid != 1 || g.Duplicate != 1 || g.Invalid != 0 || credit["honest1"].Valid != 1 {
		t.Fatalf("credit %+v: want greedy 1 valid and 1 duplicate, honest1 1 valid", st.Credit)
	}
}
