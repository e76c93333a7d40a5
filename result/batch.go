package result

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/up-pool/up/job"
)

// outerBatchDomain is what a batch of envelopes' root is signed under
// (job.SignBatchWith): apart from a single envelope's outerDomain, so
// that no envelope's payload can pass for a root or a root for a payload.
const outerBatchDomain = "up/results/v1\x00"

// MaxOuterBatch is the most envelopes one outer signature covers.
const MaxOuterBatch = 1024

// SignOuterBatch signs envelopes (sealed by SealInner, all of the one
// client whose key signs) under one signature over the Merkle root of
// their outer payloads: each gets the root's signature and its inclusion
// path. One envelope is signed alone (SignOuter). What a node checks of
// each is what it checks of one signed alone — that the client whose key
// is named signed this job's sealed bytes — with the root's signature
// verified once for the batch (VerifyOuterWith with a cache) and a few
// hashes per envelope.
func SignOuterBatch(envs []*Envelope, clientKey ed25519.PrivateKey) error {
	switch n := len(envs); {
	case n == 0:
		return nil
	case n == 1:
		SignOuter(envs[0], clientKey)
		return nil
	case n > MaxOuterBatch:
		return fmt.Errorf("sign results: batch of %d, at most %d", n, MaxOuterBatch)
	}
	pub := clientKey.Public().(ed25519.PublicKey)
	leaves := make([][]byte, len(envs))
	for i, e := range envs {
		if !bytes.Equal(e.Client, pub) {
			return fmt.Errorf("sign results: envelope of job %x names another client", e.Job)
		}
		leaves[i] = e.payload()
	}
	sig, paths, err := job.SignBatchWith(outerBatchDomain, leaves, func(msg []byte) ([]byte, error) {
		return ed25519.Sign(clientKey, msg), nil
	})
	if err != nil {
		return fmt.Errorf("sign results: %w", err)
	}
	for i, e := range envs {
		e.Sig, e.Path = sig, paths[i]
	}
	return nil
}
