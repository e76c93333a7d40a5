package blobnet

import (
	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/store"
)

// ChunkKey is where a node's store keeps chunk c's bytes (tests alter
// them to make a node lie).
func ChunkKey(c cid.Cid) []byte { return store.Key(chunkNS, c.Bytes()) }
