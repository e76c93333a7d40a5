package blobclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// MaxFirstNodes is how many of a blob's closest nodes an upload tries as
// the first node, the one it sends the chunks to, before it gives up.
const MaxFirstNodes = 3

// ErrTooFewHolders reports an upload after which fewer of the blob's r
// closest nodes hold it than a job's submission needs receipts from
// (claim.ReceiptsNeeded: 4 of 5).
var ErrTooFewHolders = errors.New("too few nodes hold the blob")

// Statement signs the project's statement for the blob m lists, created
// now on the party's clock and living lifetime (at most 366 days).
func Statement(a *agent.Agent, m *blob.Manifest, lifetime time.Duration) (*blob.SignedStatement, error) {
	return statementAt(a, m, a.Now().UnixMilli(), lifetime)
}

// statementAt is Statement created at created (Unix ms).
func statementAt(a *agent.Agent, m *blob.Manifest, created int64, lifetime time.Duration) (*blob.SignedStatement, error) {
	id := a.Identity()
	return blob.SignStatement(&blob.Statement{
		Version: blob.StatementVersion, Project: id.Name, Manifest: m.Key(), CertRef: job.CertRef(id.Cert.Raw),
		Created: created, Lifetime: lifetime.Milliseconds(),
	}, id.Key)
}

// NodeResult is one of the blob's r closest nodes after an upload, as the
// project found it when it offered the blob to the node itself.
type NodeResult struct {
	Peer    peer.ID
	Held    bool  // the node answered it holds every chunk
	Missing int   // chunks it lacked when the project offered the blob to it
	Bytes   int64 // chunk bytes the project sent it itself
	// RequestBytes is the request bodies the project sent it while
	// checking it: the offer, and the chunk puts of Bytes.
	RequestBytes int64
	Err          error
}

// Uploaded is what an upload did.
type Uploaded struct {
	Key    cid.Cid // the manifest's CID: the blob's name
	First  peer.ID // the node the project sent the chunks to, which placed the blob
	Placed int     // how many of the r closest hold the blob, by the first node's word
	Nodes  []NodeResult
	// BytesUploaded is the chunk bytes the project sent, to every node:
	// about the blob's size once when the first node placed it.
	BytesUploaded int64
	// RequestBytes is every request body the project sent: offers and
	// chunk puts, envelopes included.
	RequestBytes int64
}

// Held is how many of Nodes hold the whole blob.
func (u *Uploaded) Held() int {
	n := 0
	for _, r := range u.Nodes {
		if r.Held {
			n++
		}
	}
	return n
}

// Upload places a blob on the r nodes closest to its key: it sends the
// chunks to the closest live node only (with Replicate), which pushes
// them on to the other r − 1, so the project's upstream is the blob once;
// then it offers the blob to each of the r closest itself, sending a
// node the chunks it still lacks, and reports what each answered. chunks
// are the blob's, in manifest order; signed is the project's statement
// naming m. It fails with ErrTooFewHolders when fewer than
// claim.ReceiptsNeeded(r) of them hold it; the result says what was done.
func Upload(ctx context.Context, a *agent.Agent, signed *blob.SignedStatement, m *blob.Manifest, chunks [][]byte) (*Uploaded, error) {
	byCID, err := checkUpload(signed, m, chunks)
	if err != nil {
		return nil, err
	}
	chunk := func(c cid.Cid) ([]byte, error) {
		if data, ok := byCID[c]; ok {
			return data, nil
		}
		return nil, fmt.Errorf("%w: %s", errNoChunk, c)
	}
	up := &Uploaded{Key: m.CID()}
	offer := &wire.BlobOffer{Statement: signed.Encode(), Manifest: m.Encode()}
	d := a.DHT()
	closest, err := d.ClosestPeers(dht.DefaultPurpose(ctx, dht.PurposeSubmit), m.Key())
	if err != nil || len(closest) == 0 {
		return up, fmt.Errorf("upload blob %s: find its closest nodes: %w", up.Key, orNoPeers(err))
	}
	placeErr := uploadFirst(ctx, a, offer, closest, chunk, up)
	up.Nodes = checkHolders(ctx, a, offer, closest, chunk)
	for _, n := range up.Nodes {
		up.BytesUploaded += n.Bytes
		up.RequestBytes += n.RequestBytes
	}
	if r := d.Replication(); up.Held() < claim.ReceiptsNeeded(r) {
		return up, fmt.Errorf("upload blob %s: %d of %d closest nodes hold it (%d needed; placement: %v): %w",
			up.Key, up.Held(), len(up.Nodes), claim.ReceiptsNeeded(r), placeErr, ErrTooFewHolders)
	}
	return up, nil
}

// checkUpload checks that chunks are the blob m lists and signed names
// m, and maps the chunks by CID.
func checkUpload(signed *blob.SignedStatement, m *blob.Manifest, chunks [][]byte) (map[cid.Cid][]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("upload blob: %w", err)
	}
	_, st, err := blob.DecodeStatement(signed.Encode())
	if err != nil {
		return nil, fmt.Errorf("upload blob %s: %w", m.CID(), err)
	}
	if !slices.Equal(st.Manifest, m.Key()) || st.Project != m.Project {
		return nil, fmt.Errorf("upload blob %s: %w", m.CID(), blob.ErrWrongManifest)
	}
	cids, _ := m.ChunkCIDs() // validated
	if len(chunks) != len(cids) {
		return nil, fmt.Errorf("upload blob %s: %d chunks, the manifest lists %d", m.CID(), len(chunks), len(cids))
	}
	byCID := make(map[cid.Cid][]byte, len(cids))
	for i, c := range cids {
		if len(chunks[i]) != m.ChunkLen(i) {
			return nil, fmt.Errorf("upload blob %s: chunk %d of %d bytes, want %d: %w", m.CID(), i, len(chunks[i]), m.ChunkLen(i), blob.ErrBadChunk)
		}
		if err := blob.VerifyChunk(c, chunks[i]); err != nil {
			return nil, fmt.Errorf("upload blob %s: chunk %d: %w", m.CID(), i, err)
		}
		byCID[c] = chunks[i]
	}
	return byCID, nil
}

// uploadFirst sends the blob to the first of the closest nodes that
// takes it whole (at most MaxFirstNodes tried) and asks it to place the
// blob, waiting while it does; it records what it did in up.
func uploadFirst(ctx context.Context, a *agent.Agent, offer *wire.BlobOffer, closest []peer.ID, chunk ChunkFunc, up *Uploaded) error {
	var errs []error
	tried := 0
	for _, first := range closest {
		if tried == MaxFirstNodes || ctx.Err() != nil {
			break
		}
		if a.DHT().IsMarkedDead(first) {
			continue
		}
		tried++
		pushed, err := Push(ctx, a.Endpoint(), first, offer, chunk, PushConfig{})
		up.BytesUploaded += pushed.Bytes
		up.RequestBytes += pushed.RequestBytes
		if err == nil && !pushed.Complete {
			err = errors.New("it does not hold every chunk after the push")
		}
		if err != nil {
			a.DHT().MarkDead(first)
			errs = append(errs, fmt.Errorf("first node %s: %w", first, err))
			continue
		}
		up.First = first
		placed, n, err := place(ctx, a, first, offer)
		up.Placed = placed
		up.RequestBytes += n
		return err
	}
	return errors.Join(append(errs, errors.New("no first node took the blob"))...)
}

// place asks the first node to place the blob on its r closest, offering
// it again while the node answers that the placement goes on.
func place(ctx context.Context, a *agent.Agent, first peer.ID, offer *wire.BlobOffer) (int, int64, error) {
	replicate := *offer
	replicate.Replicate = true
	var sent int64
	for {
		resp, n, err := Offer(ctx, a.Endpoint(), first, &replicate, DefaultRequestTimeout)
		sent += n
		if err != nil {
			return 0, sent, fmt.Errorf("placement by %s: %w", first, err)
		}
		if !resp.Placing {
			return int(resp.Holders), sent, nil
		}
	}
}

// checkHolders offers the blob to each of the closest nodes, sending a
// node the chunks it still lacks, in parallel; nearest first.
func checkHolders(ctx context.Context, a *agent.Agent, offer *wire.BlobOffer, closest []peer.ID, chunk ChunkFunc) []NodeResult {
	out := make([]NodeResult, len(closest))
	var wg sync.WaitGroup
	for i, p := range closest {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pushed, err := Push(ctx, a.Endpoint(), p, offer, chunk, PushConfig{})
			out[i] = NodeResult{Peer: p, Held: err == nil && pushed.Complete, Missing: pushed.Missing, Bytes: pushed.Bytes,
				RequestBytes: pushed.RequestBytes, Err: err}
		}()
	}
	wg.Wait()
	return out
}

func orNoPeers(err error) error {
	if err == nil {
		return errors.New("no nodes known")
	}
	return err
}
