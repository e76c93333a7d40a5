package blobclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blob/cache"
	"github.com/up-pool/up/blob/fetch"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// ErrNoManifest reports a blob none of the nodes asked served a manifest
// of, with the right CID.
var ErrNoManifest = errors.New("no node served the blob's manifest")

// nodeSource asks one node for chunks.
type nodeSource struct {
	ep *overlay.Endpoint
	p  peer.ID
}

// NodeSource is node p as a fetch.Source: GetChunk asks it for a chunk
// over ep (ChunkGet) and returns the bytes unverified.
func NodeSource(ep *overlay.Endpoint, p peer.ID) fetch.Source { return nodeSource{ep: ep, p: p} }

// ID is the node's peer ID.
func (n nodeSource) ID() string { return n.p.String() }

// GetChunk asks the node for chunk c.
func (n nodeSource) GetChunk(ctx context.Context, c cid.Cid) ([]byte, error) {
	var resp wire.ChunkGetResponse
	if err := n.ep.Call(ctx, n.p, wire.ProtoChunkGet, &wire.ChunkGet{Chunk: c.Bytes()}, wire.MaxChunkFrame, &resp); err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// Sources finds the nodes holding the blob key (its manifest's CID
// bytes): hint when given (the nodes a job's listing or a previous fetch
// named), else the r closest to key by a lookup. It asks each for the
// manifest in parallel and keeps those that serve one whose CID is key,
// so a node cannot pass off another blob. It returns the manifest and
// one fetch.Source per such node, nearest first, for a fetch.Fetcher.
func Sources(ctx context.Context, a *agent.Agent, key []byte, hint ...peer.ID) (*blob.Manifest, []fetch.Source, error) {
	want, err := blob.ParseManifestCID(key)
	if err != nil {
		return nil, nil, fmt.Errorf("blob sources: %w", err)
	}
	nodes := hint
	if len(nodes) == 0 {
		nodes, err = a.DHT().ClosestPeers(dht.DefaultPurpose(ctx, dht.PurposeOther), key)
		if err != nil || len(nodes) == 0 {
			return nil, nil, fmt.Errorf("blob %s: find its nodes: %w", want, orNoPeers(err))
		}
	}
	manifests := make([]*blob.Manifest, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, p := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			manifests[i], errs[i] = getManifest(ctx, a.Endpoint(), p, key)
		}()
	}
	wg.Wait()
	var m *blob.Manifest
	var out []fetch.Source
	for i, p := range nodes {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("%s: %w", p, errs[i])
			continue
		}
		m = manifests[i]
		out = append(out, NodeSource(a.Endpoint(), p))
	}
	if m == nil {
		return nil, nil, fmt.Errorf("blob %s: %w: %w", want, ErrNoManifest, errors.Join(errs...))
	}
	return m, out, nil
}

// getManifest asks node p for the blob's manifest and checks that its CID
// is key.
func getManifest(ctx context.Context, ep *overlay.Endpoint, p peer.ID, key []byte) (*blob.Manifest, error) {
	cctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	var resp wire.ManifestGetResponse
	if err := ep.Call(cctx, p, wire.ProtoManifestGet, &wire.ManifestGet{Blob: key}, wire.MaxManifestReply, &resp); err != nil {
		return nil, err
	}
	m, err := blob.DecodeManifest(resp.Manifest)
	if err != nil {
		return nil, err
	}
	if got := m.Key(); !bytes.Equal(got, key) {
		return nil, fmt.Errorf("%w: served manifest %s", blob.ErrWrongManifest, m.CID())
	}
	return m, nil
}

// Fetch downloads and verifies the blob key from its nodes (Sources: hint,
// else a lookup), in parallel, through c when not nil (consulted first,
// filled as chunks arrive).
func Fetch(ctx context.Context, a *agent.Agent, key []byte, c *cache.Cache, hint ...peer.ID) (*fetch.Result, error) {
	m, sources, err := Sources(ctx, a, key, hint...)
	if err != nil {
		return nil, err
	}
	f := &fetch.Fetcher{Sources: sources, Cache: c}
	return f.Fetch(ctx, m)
}
