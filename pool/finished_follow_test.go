package pool_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/result"
)

// closestIdx returns the slots of the n running nodes closest to key,
// closest first.
func (pn *poolNet) closestIdx(key []byte, n int) []int {
	var out []int
	for _, p := range pn.net.TrueClosest(key, n) {
		out = append(out, pn.net.Index(p))
	}
	return out
}

// quiesce waits until every running node's background work (hand-ons,
// result pass-ons, result fetches) is done; twice, as one node's work can
// start another's.
func (pn *poolNet) quiesce() {
	for range 2 {
		for _, nd := range pn.net.Live() {
			nd.Pool().Quiesce()
		}
	}
}

// rejoin restarts the killed nodes and lets the others see them again.
func (pn *poolNet) rejoin(t *testing.T, idx []int) {
	t.Helper()
	for _, i := range idx {
		if err := pn.net.Restart(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	pn.clock.Advance(10 * time.Minute) // past the dead-peer backoff
	if err := pn.net.Refill(); err != nil {
		t.Fatal(err)
	}
}

// movedClaim builds the situation of the sim's stranded jobs: a job
// claimed on its r closest live nodes (the claim's nodes) while its three
// closest nodes were down; they come back and a republish round gives them
// the claim, so three of the claim's nodes are no longer among the job's
// r closest. It returns the job, the claim's nodes and the job's r closest
// now (closest first), and the claiming client's key.
func movedClaim(t *testing.T, pn *poolNet) (key []byte, claimNodes, closest []int, client *keystore.Identity) {
	t.Helper()
	ctx := context.Background()
	const r = 5
	key = pn.keys[0]
	first := pn.closestIdx(key, r)
	away := first[:3]
	for _, i := range away {
		if err := pn.net.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	pn.net.RepublishAll(ctx) // the 6th to 8th closest take the job
	claimNodes = pn.closestIdx(key, r)
	for _, i := range claimNodes {
		if _, ok := pn.net.Node(i).Pool().State(key); !ok {
			t.Fatalf("claim node %d does not hold the job after the repair", i)
		}
	}
	client = pn.newClient(t)
	now := pn.clock.Now().UnixMilli()
	claim := job.State{Phase: job.Claimed, Client: client.Key.Public().(ed25519.PublicKey), Start: now, Deadline: now + 24*3600_000}
	for _, i := range claimNodes {
		if _, err := pn.net.Node(i).Pool().ApplyProven(key, claim, trustedClaim); err != nil {
			t.Fatal(err)
		}
	}
	pn.rejoin(t, away)
	pn.net.RepublishAll(ctx)
	closest = pn.closestIdx(key, r)
	if !slices.Equal(closest, first) {
		t.Fatalf("the job's r closest are %v after the rejoin, want %v", closest, first)
	}
	for _, i := range closest {
		st, _ := pn.net.Node(i).Pool().State(key)
		if st.Phase != job.Claimed {
			t.Fatalf("node %d, among the job's r closest, holds it as %s after a round, want the claim", i, st.Phase)
		}
	}
	if moved := diff(claimNodes, closest); len(moved) != 3 {
		t.Fatalf("claim's nodes %v, r closest %v: want 3 claim nodes outside", claimNodes, closest)
	}
	return key, claimNodes, closest, client
}

// TestResultFollowsMovedJob: a job is claimed on its r closest; closer
// nodes join and a republish round makes them the job's r closest (with
// the claim); the client's result reaches the claim's nodes only, and
// they all die before their next republish round. The finished state and
// the result must be on the live r closest: the nodes that stored the
// result passed it on at once. Before they did, the job stayed claimed on
// every live replica and ran again after T_finish.
func TestResultFollowsMovedJob(t *testing.T) {
	pn := startTrustingPoolNet(t, 16, 8, 41)
	ctx := context.Background()
	key, claimNodes, closest, client := movedClaim(t, pn)
	projectKey := make([]byte, 32)
	if _, err := rand.Read(projectKey); err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: key, Output: []byte("42"), At: pn.clock.Now().UnixMilli()}, client.Key, projectKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	envBytes := env.Encode()
	at := pn.clock.Now().UnixMilli()
	for _, i := range claimNodes {
		if err := pn.net.Node(i).Pool().SubmitResult(client.Cert.Raw, envBytes, at); err != nil {
			t.Fatalf("result at claim node %d: %v", i, err)
		}
	}
	pn.quiesce()
	for _, i := range claimNodes {
		if err := pn.net.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	finished := func(i int) bool {
		p := pn.net.Node(i).Pool()
		st, _ := p.State(key)
		b, has := p.Result(key)
		return st.Phase == job.Finished && bytes.Equal(st.Result, env.Digest()) && has && bytes.Equal(b, envBytes)
	}
	survivors := diff(closest, claimNodes)
	for _, i := range survivors {
		if !finished(i) {
			st, _ := pn.net.Node(i).Pool().State(key)
			_, has := pn.net.Node(i).Pool().Result(key)
			t.Errorf("node %d, among the job's r closest, holds it as %s (result held: %v) once the claim's nodes died, want finished with the result",
				i, st.Phase, has)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// Republish spreads it to the rest of the live r closest: stored in
	// one round, its result fetched in the next.
	pn.net.RepublishAll(ctx)
	pn.net.RepublishAll(ctx)
	for _, i := range pn.closestIdx(key, 5) {
		if !finished(i) {
			st, _ := pn.net.Node(i).Pool().State(key)
			t.Errorf("node %d, among the job's live r closest, holds it as %s after two rounds", i, st.Phase)
		}
	}
}

// TestLingeringHolderHandsOnNewerState: a node no longer among a job's r
// closest (it stood in for them while they were down) holds a newer state
// than they do (a claim, then a result, that reached only it). Its
// republish rounds hand the state to the job's closest while it keeps its
// copy, and once more before it drops the copy at the replica expiry.
func TestLingeringHolderHandsOnNewerState(t *testing.T) {
	pn := startTrustingPoolNet(t, 16, 8, 42)
	ctx := context.Background()
	key := pn.keys[0]
	first := pn.closestIdx(key, 6)
	away, standIn := first[0], first[5]
	if err := pn.net.Kill(away); err != nil {
		t.Fatal(err)
	}
	pn.net.RepublishAll(ctx)
	if _, ok := pn.net.Node(standIn).Pool().State(key); !ok {
		t.Fatalf("node %d did not stand in for the dead node", standIn)
	}
	pn.rejoin(t, []int{away})
	pn.net.RepublishAll(ctx)
	if slices.Contains(pn.closestIdx(key, 5), standIn) {
		t.Fatal("the stand-in is still among the r closest")
	}
	lingering := pn.net.Node(standIn).Pool()
	closest := pn.net.Node(away).Pool() // back as the job's closest
	now := pn.clock.Now().UnixMilli()
	claim := job.State{Phase: job.Claimed, Client: []byte("c1"), Start: now, Deadline: now + 24*3600_000}
	if _, err := lingering.ApplyProven(key, claim, trustedClaim); err != nil {
		t.Fatal(err)
	}
	lingering.RepublishRound(ctx)
	pn.quiesce()
	if st, _ := closest.State(key); !job.Equal(st, claim) {
		t.Fatalf("the job's closest holds %+v after the lingering node's round, want its claim %+v", st, claim)
	}
	if _, held := lingering.State(key); !held {
		t.Fatal("the lingering node dropped the job within the replica expiry")
	}
	// Past the replica expiry: the next round drops the copy, after
	// handing on the state it has by then.
	pn.clock.Advance(61 * time.Minute)
	fin, finProof, finEnv := pn.finished(t, key, pn.newClient(t), pn.clock.Now().UnixMilli())
	if _, err := lingering.Merge(key, fin, finProof, finEnv); err != nil {
		t.Fatal(err)
	}
	st := lingering.RepublishRound(ctx)
	pn.quiesce()
	if _, held := lingering.State(key); held || st.Dropped == 0 {
		t.Fatalf("the lingering node still holds the job past the replica expiry (round %+v)", st)
	}
	if got, _ := closest.State(key); !job.Equal(got, fin) {
		t.Fatalf("the job's closest holds %+v after the lingering node dropped its copy, want %+v", got, fin)
	}
}
