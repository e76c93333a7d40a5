package job

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"testing"
)

// provenItem is a state with the evidence a receiver checks: a collected
// state's proof, or a finished state's result facts.
type provenItem struct {
	st    State
	proof Proof
	facts ResultFacts
}

// check is the receiver's filter (pool.checkProof without the I/O).
func (it provenItem) check(key []byte, projectKey ed25519.PublicKey) error {
	switch it.st.Phase {
	case Collected:
		return CheckCollected(key, it.st, it.proof, projectKey)
	case Finished:
		return CheckFinished(key, it.st, it.facts)
	}
	return nil
}

// receive is what a node keeps: the join with a state whose proof holds;
// the held state when it does not.
func receive(held State, it provenItem, key []byte, projectKey ed25519.PublicKey) State {
	if it.check(key, projectKey) != nil {
		return held
	}
	return Merge(held, it.st)
}

func randomProven(rng *rand.Rand, key []byte, project ed25519.PrivateKey, clients [][]byte) provenItem {
	at := 1 + rng.Int64N(50)
	valid := rng.IntN(2) == 0
	switch rng.IntN(4) {
	case 0:
		st := State{Phase: Collected, At: at}
		pr := SignCollected(key, at, project)
		if !valid {
			switch rng.IntN(3) {
			case 0:
				pr = Proof{} // missing
			case 1:
				st.At++ // signed another time
			default:
				pr.Sig = bytes.Clone(pr.Sig)
				pr.Sig[rng.IntN(len(pr.Sig))] ^= 1
			}
		}
		return provenItem{st: st, proof: pr}
	case 1:
		c := clients[rng.IntN(len(clients))]
		digest := []byte{byte(rng.IntN(4)), 1, 2}
		st := State{Phase: Finished, Client: c, At: at, Result: digest}
		facts := ResultFacts{Job: key, Signer: c, Digest: digest, CertKey: c}
		if !valid {
			switch rng.IntN(4) {
			case 0:
				facts = ResultFacts{} // no envelope
			case 1:
				facts.Digest = []byte{9, 9} // made-up digest
			case 2:
				facts.CertKey = []byte("uncertified")
			default:
				facts.Job = []byte("another job")
			}
		}
		return provenItem{st: st, facts: facts}
	case 2:
		return provenItem{st: State{Phase: Claimed, Client: clients[rng.IntN(len(clients))], Start: at, Deadline: at + 10}}
	}
	return provenItem{st: State{Phase: Ready, Client: clients[rng.IntN(len(clients))], Start: at}}
}

// TestMergeWithProofsIsAJoin: over random sets of states with valid,
// missing and forged proofs, the merge with proofs is still a join (any
// order of delivery, with repeats, gives the join of the states whose
// proof holds) and no state with a missing or forged proof changes a
// replica.
func TestMergeWithProofsIsAJoin(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	key := []byte("job-key")
	clients := [][]byte{[]byte("client-a"), []byte("client-b"), []byte("client-c")}
	rng := rand.New(rand.NewPCG(17, 17))
	invalid := 0
	for round := 0; round < 2000; round++ {
		items := make([]provenItem, 1+rng.IntN(8))
		for i := range items {
			items[i] = randomProven(rng, key, priv, clients)
		}
		want := State{}
		for _, it := range items {
			if it.check(key, pub) == nil {
				want = Merge(want, it.st)
			}
		}
		for range 3 {
			held := State{}
			for _, i := range rng.Perm(len(items) * 2) { // every item, twice, in any order
				it := items[i%len(items)]
				next := receive(held, it, key, pub)
				if err := it.check(key, pub); err != nil {
					invalid++
					if !errors.Is(err, ErrNoProof) && !errors.Is(err, ErrForgedProof) {
						t.Fatalf("refusal %v is neither ErrNoProof nor ErrForgedProof", err)
					}
					if !Equal(next, held) {
						t.Fatalf("a %s state with a bad proof changed %+v to %+v", it.st.Phase, held, next)
					}
				}
				held = next
			}
			if !Equal(held, want) {
				t.Fatalf("round %d: replica at %+v, want the join of the proven states %+v", round, held, want)
			}
		}
	}
	if invalid == 0 {
		t.Fatal("no invalid proofs drawn")
	}
}

// TestDecodeProofBounds: a proof over MaxProofSize or not a Proof is
// refused as malformed; the empty proof decodes to nothing.
func TestDecodeProofBounds(t *testing.T) {
	if _, err := DecodeProof(make([]byte, MaxProofSize+1)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("oversized proof: %v", err)
	}
	if _, err := DecodeProof([]byte{0xff, 0x00}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage proof: %v", err)
	}
	if p, err := DecodeProof(nil); err != nil || len(p.Sig)+len(p.Cert)+len(p.Claim) != 0 {
		t.Fatalf("empty proof: %+v, %v", p, err)
	}
	p := Proof{Sig: []byte{1}, Cert: []byte{2}, Claim: []byte{3}}
	if q, err := DecodeProof(p.Encode()); err != nil || !bytes.Equal(q.Claim, p.Claim) {
		t.Fatalf("round trip: %+v, %v", q, err)
	}
}
