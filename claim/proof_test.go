package claim

import (
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/job"
)

// provenClaim is a claimed state or tombstone with its claim proof, as a
// node sends it.
type provenClaim struct {
	st      job.State
	accepts []Statement
	rel     ReleaseProof
}

const propTFinish = 100

func (c provenClaim) check(key []byte) error {
	near := func(n string) bool { return n != "far" }
	return CheckClaimProof(key, c.st, c.accepts, c.rel, 4, near, propTFinish)
}

// randomClaim draws a claim, release or tombstone with a proof that is
// valid, missing or forged in one of several ways.
func randomClaim(rng *rand.Rand, key []byte, clients []ed25519.PrivateKey) provenClaim {
	ck := clients[rng.IntN(len(clients))]
	client := []byte(ck.Public().(ed25519.PublicKey))
	start := int64(1 + rng.IntN(4))
	var c provenClaim
	switch rng.IntN(4) {
	case 0, 1:
		c.st = job.State{Phase: job.Claimed, Client: client, Start: start, Deadline: start + propTFinish}
	case 2:
		c.st = job.State{Phase: job.Claimed, Client: client, Start: start, Deadline: start + 1 + int64(rng.IntN(propTFinish-1))}
	default:
		c.st = job.State{Phase: job.Ready, Client: client, Start: start}
	}
	if rng.IntN(8) == 0 {
		c.st.Deadline = start + propTFinish + 5 // forged: past T_finish
		c.st.Phase = job.Claimed
	}
	nodes := []string{"n0", "n1", "n2", "n3", "n4", "far"}
	for _, i := range rng.Perm(len(nodes))[:rng.IntN(len(nodes)+1)] {
		a := Statement{Kind: Accepted, Job: key, Client: client, Node: []byte(nodes[i]), Start: start}
		switch rng.IntN(12) {
		case 0:
			a.Kind = Granted
		case 1:
			a.Start++
		case 2:
			a.Node = []byte("n0") // maybe twice
		}
		c.accepts = append(c.accepts, a)
	}
	switch rng.IntN(4) {
	case 0: // none
	case 1:
		c.rel = ReleaseProof{Sig: SignRelease(key, start, ck), CertKey: ck.Public().(ed25519.PublicKey)}
	case 2:
		other := clients[(rng.IntN(len(clients)))]
		c.rel = ReleaseProof{Sig: SignRelease(key, start, other), CertKey: other.Public().(ed25519.PublicKey)}
	default:
		c.rel = ReleaseProof{Sig: SignRelease(key, start+1, ck), CertKey: ck.Public().(ed25519.PublicKey)}
	}
	return c
}

// TestMergeWithClaimProofsIsAJoin: a replica merging claims, releases
// and tombstones only when CheckClaimProof passes converges to the join
// of the proven ones, whatever the order and repetition; a state with a
// missing or forged proof never changes it.
func TestMergeWithClaimProofsIsAJoin(t *testing.T) {
	key := []byte("job-key")
	var clients []ed25519.PrivateKey
	for range 3 {
		_, k, _ := ed25519.GenerateKey(nil)
		clients = append(clients, k)
	}
	rng := rand.New(rand.NewPCG(23, 23))
	valid, invalid := 0, 0
	for round := range 2000 {
		items := make([]provenClaim, 1+rng.IntN(8))
		for i := range items {
			items[i] = randomClaim(rng, key, clients)
		}
		want := job.State{}
		for _, it := range items {
			if it.check(key) == nil {
				want = job.Merge(want, it.st)
			}
		}
		for range 3 {
			held := job.State{}
			for _, i := range rng.Perm(len(items) * 2) {
				it := items[i%len(items)]
				next := held
				if err := it.check(key); err != nil {
					invalid++
					if !errors.Is(err, job.ErrNoProof) && !errors.Is(err, job.ErrForgedProof) {
						t.Fatalf("refusal %v is neither ErrNoProof nor ErrForgedProof", err)
					}
				} else {
					valid++
					next = job.Merge(held, it.st)
				}
				held = next
			}
			if !job.Equal(held, want) {
				t.Fatalf("round %d: replica at %+v, want the join of the proven states %+v", round, held, want)
			}
		}
	}
	if valid == 0 || invalid == 0 {
		t.Fatalf("drew %d valid and %d invalid proofs", valid, invalid)
	}
}

// TestCheckClaimProof: each rule of a claim certificate and release.
func TestCheckClaimProof(t *testing.T) {
	key := []byte("job-key")
	_, ck, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	client := []byte(ck.Public().(ed25519.PublicKey))
	live := job.State{Phase: job.Claimed, Client: client, Start: 10, Deadline: 10 + propTFinish}
	released := live
	released.Deadline = 11
	tomb := job.State{Phase: job.Ready, Client: client, Start: 10}
	acc := func(nodes ...string) []Statement {
		var out []Statement
		for _, n := range nodes {
			out = append(out, Statement{Kind: Accepted, Job: key, Client: client, Node: []byte(n), Start: 10})
		}
		return out
	}
	q := acc("a", "b", "c", "d")
	goodRel := ReleaseProof{Sig: SignRelease(key, 10, ck), CertKey: ck.Public().(ed25519.PublicKey)}
	late := live
	late.Start = 11
	late.Deadline = 11 + propTFinish
	for _, c := range []struct {
		name    string
		st      job.State
		accepts []Statement
		rel     ReleaseProof
		want    error
	}{
		{"live claim with a quorum", live, q, ReleaseProof{}, nil},
		{"no certificate", live, nil, ReleaseProof{}, job.ErrNoProof},
		{"three of four", live, acc("a", "b", "c"), ReleaseProof{}, job.ErrForgedProof},
		{"one far node not counted", live, acc("a", "b", "c", "far"), ReleaseProof{}, job.ErrForgedProof},
		{"far node beside a quorum", live, acc("a", "b", "c", "d", "far"), ReleaseProof{}, nil},
		{"a node twice", live, acc("a", "b", "c", "c"), ReleaseProof{}, job.ErrForgedProof},
		{"certificate of another start", late, q, ReleaseProof{}, job.ErrForgedProof},
		{"deadline past T_finish", job.State{Phase: job.Claimed, Client: client, Start: 10, Deadline: 11 + propTFinish}, q, ReleaseProof{}, job.ErrForgedProof},
		{"release signed by its client", released, q, goodRel, nil},
		{"release without signature", released, q, ReleaseProof{}, job.ErrNoProof},
		{"release under another certificate", released, q, ReleaseProof{Sig: SignRelease(key, 10, other), CertKey: other.Public().(ed25519.PublicKey)}, job.ErrForgedProof},
		{"release of another start", released, q, ReleaseProof{Sig: SignRelease(key, 9, ck), CertKey: goodRel.CertKey}, job.ErrForgedProof},
		{"tombstone with release", tomb, q, goodRel, nil},
		{"tombstone without release", tomb, q, ReleaseProof{}, job.ErrNoProof},
		{"release without certificate", released, nil, goodRel, job.ErrNoProof},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckClaimProof(key, c.st, c.accepts, c.rel, 4, func(n string) bool { return n != "far" }, propTFinish)
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("CheckClaimProof = %v, want %v", err, c.want)
			}
		})
	}
}
