package pool_test

import (
	"crypto/ed25519"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/result"
)

var clientSeq atomic.Int64

// newClient makes a client certified by the network's CA.
func (pn *poolNet) newClient(t *testing.T) *keystore.Identity {
	t.Helper()
	id, err := pn.net.NewParty(certs.RoleClient, fmt.Sprintf("client%d", clientSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// collected is the project's collected state of key at at, with its proof.
func (pn *poolNet) collected(key []byte, at int64) (job.State, []byte) {
	pr := job.SignCollected(key, at, pn.proj.Agent().Identity().Key)
	return job.State{Phase: job.Collected, At: at}, pr.Encode()
}

// finished is a finished state of key by client at at, with its proof and
// the result envelope it names.
func (pn *poolNet) finished(t *testing.T, key []byte, client *keystore.Identity, at int64) (st job.State, proof, env []byte) {
	t.Helper()
	e, err := result.Seal(result.Inner{Job: key, ClientCert: client.Cert.Raw, Output: []byte("42"), At: at},
		client.Key, pn.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st = job.State{Phase: job.Finished, Client: client.Key.Public().(ed25519.PublicKey), At: at, Result: e.Digest()}
	return st, (&job.Proof{Cert: client.Cert.Raw}).Encode(), e.Encode()
}

// merge merges a proven state into node i's replica.
func (pn *poolNet) merge(t *testing.T, i int, key []byte, st job.State, proof, env []byte) {
	t.Helper()
	if _, err := pn.net.Node(i).Pool().Merge(key, st, proof, env); err != nil {
		t.Fatal(err)
	}
}

// collectedProof is the project's proof of key collected at at.
func (pn *poolNet) collectedProof(key []byte, at int64) []byte {
	_, pr := pn.collected(key, at)
	return pr
}
