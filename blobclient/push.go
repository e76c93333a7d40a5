package blobclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// Defaults of a PushConfig.
const (
	// DefaultPushConcurrency is how many chunks are sent to one node at
	// once: 4 MiB in flight.
	DefaultPushConcurrency = 4
	// DefaultRequestTimeout bounds one offer or one chunk request (1 MiB
	// in 30 s is 35 KB/s, a slow volunteer uplink).
	DefaultRequestTimeout = 30 * time.Second
)

// PushConfig tunes Push. Zero values take the defaults.
type PushConfig struct {
	Concurrency int           // chunks in flight to the node at once; 0: DefaultPushConcurrency
	Timeout     time.Duration // per request; 0: DefaultRequestTimeout
}

func (c PushConfig) withDefaults() PushConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultPushConcurrency
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultRequestTimeout
	}
	return c
}

// Pushed is what one Push did.
type Pushed struct {
	Missing int   // chunks the node lacked when offered the blob
	Sent    int   // chunk puts sent (each attempted one)
	Bytes   int64 // chunk bytes in the puts sent
	// RequestBytes is the request bodies sent, envelopes included: the
	// offer and every chunk put.
	RequestBytes int64
	Complete     bool // the node holds every chunk now, by its word
}

// ChunkFunc returns a chunk's bytes to send.
type ChunkFunc func(c cid.Cid) ([]byte, error)

// Push offers a blob to node p (offer must not ask for placement) and
// sends it, Concurrency at a time, the chunks it answers it lacks that
// the manifest lists, read with chunk. The first failed request ends the
// push; what was done until then is returned with the error.
func Push(ctx context.Context, ep *overlay.Endpoint, p peer.ID, offer *wire.BlobOffer, chunk ChunkFunc, cfg PushConfig) (Pushed, error) {
	cfg = cfg.withDefaults()
	var out Pushed
	m, err := blob.DecodeManifest(offer.Manifest)
	if err != nil {
		return out, fmt.Errorf("push blob to %s: %w", p, err)
	}
	key := m.Key()
	resp, n, err := Offer(ctx, ep, p, offer, cfg.Timeout)
	out.RequestBytes += n
	if err != nil {
		return out, err
	}
	missing, err := listedMissing(m, resp.Missing)
	if err != nil {
		return out, fmt.Errorf("push blob %s to %s: %w", m.CID(), p, err)
	}
	out.Missing = len(missing)
	if len(missing) == 0 {
		out.Complete = true
		return out, nil
	}
	err = putAll(ctx, ep, p, key, missing, chunk, cfg, &out)
	return out, err
}

// Offer sends one offer to node p within timeout and returns its answer
// and the request's size in bytes.
func Offer(ctx context.Context, ep *overlay.Endpoint, p peer.ID, offer *wire.BlobOffer, timeout time.Duration) (*wire.BlobOfferResponse, int64, error) {
	n := 2 + bstrSize(len(offer.Statement)) + bstrSize(len(offer.Manifest)) + bstrSize(len(offer.Cert)) // array and bool: 2 bytes
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var resp wire.BlobOfferResponse
	if err := ep.Call(cctx, p, wire.ProtoBlobOffer, offer, wire.MaxBlobOfferReply, &resp); err != nil {
		return nil, n, fmt.Errorf("offer blob: %w", err)
	}
	return &resp, n, nil
}

// listedMissing parses the chunks a node answered it lacks, keeping
// those the manifest lists: a node cannot make the sender read others.
func listedMissing(m *blob.Manifest, missing [][]byte) ([]cid.Cid, error) {
	cids, _ := m.ChunkCIDs() // decoded: they parse
	listed := make(map[cid.Cid]bool, len(cids))
	for _, c := range cids {
		listed[c] = true
	}
	var out []cid.Cid
	seen := map[cid.Cid]bool{}
	for _, b := range missing {
		c, err := blob.ParseChunkCID(b)
		if err != nil {
			return nil, fmt.Errorf("answer names a missing chunk: %w", err)
		}
		if listed[c] && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// putAll sends the chunks to node p, Concurrency at a time, counting
// them in out; the first failure ends it.
func putAll(ctx context.Context, ep *overlay.Endpoint, p peer.ID, key []byte, chunks []cid.Cid, chunk ChunkFunc, cfg PushConfig, out *Pushed) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan cid.Cid, len(chunks))
	for _, c := range chunks {
		queue <- c
	}
	close(queue)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(cfg.Concurrency, len(chunks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range queue {
				if ctx.Err() != nil {
					return
				}
				data, err := chunk(c)
				var complete bool
				var n int64
				if err == nil {
					n = putSize(key, c, data)
					complete, err = putChunk(ctx, ep, p, key, c, data, cfg.Timeout)
				}
				mu.Lock()
				if n > 0 {
					out.Sent++
					out.Bytes += int64(len(data))
					out.RequestBytes += n
				}
				out.Complete = out.Complete || complete
				if err != nil && first == nil {
					first = fmt.Errorf("push chunk %s of blob %x to %s: %w", c, key, p, err)
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// putChunk sends one chunk and returns whether the node now holds the
// whole blob.
func putChunk(ctx context.Context, ep *overlay.Endpoint, p peer.ID, key []byte, c cid.Cid, data []byte, timeout time.Duration) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var resp wire.ChunkPutResponse
	err := ep.Call(cctx, p, wire.ProtoChunkPut, &wire.ChunkPut{Blob: key, Chunk: c.Bytes(), Data: data}, 1<<10, &resp)
	return resp.Complete, err
}

// putSize is the encoded size of a ChunkPut, in bytes: a three-element
// array of byte strings.
func putSize(key []byte, c cid.Cid, data []byte) int64 {
	return 1 + bstrSize(len(key)) + bstrSize(c.ByteLen()) + bstrSize(len(data))
}

// bstrSize is the size of a CBOR byte string of n bytes, header included.
func bstrSize(n int) int64 {
	switch {
	case n < 24:
		return int64(1 + n)
	case n < 1<<8:
		return int64(2 + n)
	case n < 1<<16:
		return int64(3 + n)
	case n < 1<<32:
		return int64(5 + n)
	}
	return int64(9 + n)
}

// errNoChunk reports a chunk the uploader does not have.
var errNoChunk = errors.New("chunk not among the blob's")
