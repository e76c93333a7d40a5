package blobnet_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blob/fetch"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// TestUploadAndFetch: the project uploads a 5 MiB blob on 8 nodes; its r
// = 5 closest hold it whole and no other node holds any of it; the
// project sent the chunks once (the first node pushed them to the other
// four: 4 × 5 MiB from it); a client fetches the blob from the five
// holders in parallel, each verified chunk from a different holder.
// Controls: a second upload of the same blob sends no chunk at all (the
// byte count is the project's, not a constant), and the fetch counts each
// holder's chunks (a fetch from one node would show one source).
func TestUploadAndFetch(t *testing.T) {
	bn := startBlobNet(t, 8, 3, blobnet.Config{})
	b := newBlob(t, "lhc", 1, 5<<20)
	key := b.m.Key()
	up := bn.upload(t, b)

	closest := bn.net.TrueClosest(key, 5)
	bn.checkHeldBy(t, key, closest)
	if up.First != closest[0] {
		t.Errorf("uploaded to %s, want the closest %s", up.First, closest[0])
	}
	if up.Held() != 5 || up.Placed != 5 {
		t.Errorf("upload: %d holders checked, %d placed by the first node, want 5 and 5: %+v", up.Held(), up.Placed, up.Nodes)
	}
	for _, nd := range bn.net.Live() {
		if held, _ := nd.Blobs().Holds(key); !held && nd.Blobs().ChunkBytes() != 0 {
			t.Errorf("node %s, not a holder, stores %d chunk bytes", nd.ID(), nd.Blobs().ChunkBytes())
		}
	}
	size := int64(len(b.data))
	if up.BytesUploaded != size {
		t.Errorf("project uploaded %d chunk bytes, want the blob's %d once", up.BytesUploaded, size)
	}
	if up.RequestBytes < size || up.RequestBytes > size+size/100 {
		t.Errorf("project sent %d request bytes, want within 1%% over the blob's %d", up.RequestBytes, size)
	}
	if chunks, pushed := bn.service(t, up.First).Pushed(); pushed != 4*size || chunks != 4*int64(len(b.chunks)) {
		t.Errorf("first node pushed %d chunks of %d bytes, want %d of %d (to the four others)", chunks, pushed, 4*len(b.chunks), 4*size)
	}
	again := bn.upload(t, b)
	if again.BytesUploaded != 0 || again.Held() != 5 {
		t.Errorf("second upload: %d chunk bytes sent, %d holders; want 0 and 5", again.BytesUploaded, again.Held())
	}

	client := bn.agent(t, certs.RoleClient, "alice")
	ctx := context.Background()
	m, sources, err := blobclient.Sources(ctx, client, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 5 || !bytes.Equal(m.Key(), key) {
		t.Fatalf("sources: %d for manifest %s, want 5 for %s", len(sources), m.CID(), b.m.CID())
	}
	res, err := (&fetch.Fetcher{Sources: sources}).Fetch(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Data, b.data) || len(res.Misbehaving) != 0 {
		t.Fatalf("fetched %d bytes (equal: %v), %d misbehaving", len(res.Data), bytes.Equal(res.Data, b.data), len(res.Misbehaving))
	}
	served := 0
	for id, st := range res.Sources {
		if st.Chunks > 1 {
			t.Errorf("source %s served %d chunks, want one each from five in parallel", id, st.Chunks)
		}
		served += st.Chunks
	}
	if served != 5 {
		t.Errorf("%d chunks served, want 5", served)
	}
}

// TestSourcesCheckTheManifest: a client asking for a blob under a key no
// node holds a manifest of gets ErrNoManifest, and one asking a node that
// holds no copy (as a hint) gets none of it as a source. Control: the
// right key from the same hint finds it.
func TestSourcesCheckTheManifest(t *testing.T) {
	bn := startBlobNet(t, 8, 4, blobnet.Config{})
	b := newBlob(t, "lhc", 2, 1<<20+5)
	bn.upload(t, b)
	other := newBlob(t, "lhc", 3, 100)
	client := bn.agent(t, certs.RoleClient, "alice")
	ctx := context.Background()
	if _, _, err := blobclient.Sources(ctx, client, other.m.Key()); err == nil {
		t.Fatal("sources of a blob nobody holds: no error")
	}
	holders := bn.holders(b.m.Key())
	if _, src, err := blobclient.Sources(ctx, client, b.m.Key(), holders[0]); err != nil || len(src) != 1 {
		t.Fatalf("sources from a holder as hint: %d, %v", len(src), err)
	}
	var far []string
	for _, nd := range bn.net.Live() {
		if held, _ := nd.Blobs().Holds(b.m.Key()); !held {
			_, src, err := blobclient.Sources(ctx, client, b.m.Key(), nd.ID())
			if err == nil || len(src) != 0 {
				t.Errorf("sources from non-holder %s: %d, %v", nd.ID(), len(src), err)
			}
			far = append(far, nd.ID().String())
		}
	}
	if len(far) != 3 {
		t.Errorf("%d non-holders, want 3", len(far))
	}
	res, err := blobclient.Fetch(ctx, client, b.m.Key(), nil)
	if err != nil || !bytes.Equal(res.Data, b.data) {
		t.Fatalf("fetch: %v", err)
	}
	if err := blob.VerifyBlob(b.m, res.Data); err != nil {
		t.Fatal(err)
	}
}

// TestSharedChunksStoredOnce: two projects' blobs of the same bytes have
// distinct manifests, each charged to its own project, but share their
// chunks: a node holding the first answers the second's offer with no
// chunk missing and stores the bytes once; deleting one blob keeps the
// chunks the other lists, deleting both frees them. Control: a blob of
// other bytes lacks every chunk.
func TestSharedChunksStoredOnce(t *testing.T) {
	bn := startBlobNet(t, 8, 13, blobnet.Config{})
	lhcBlob := newBlob(t, "lhc", 30, 2<<20+9)
	cern := bn.agent(t, certs.RoleProject, "cern")
	cernBlob := newBlob(t, "cern", 30, 2<<20+9)
	otherBlob := newBlob(t, "cern", 31, 2<<20+9)
	nd := bn.net.Live()[0]
	s := nd.Blobs()
	if _, err := bn.push(nd.ID(), sign(t, bn.proj, lhcBlob), lhcBlob); err != nil {
		t.Fatal(err)
	}
	offerOf := func(b *testBlob) *wire.BlobOffer {
		return &wire.BlobOffer{Statement: sign(t, cern, b).Encode(), Manifest: b.m.Encode()}
	}
	if resp, err := offer(cern.Endpoint(), nd.ID(), offerOf(otherBlob)); err != nil || len(resp.Missing) != 3 {
		t.Fatalf("control: a blob of other bytes: %d missing, %v; want 3", len(resp.Missing), err)
	}
	resp, err := offer(cern.Endpoint(), nd.ID(), offerOf(cernBlob))
	if err != nil || len(resp.Missing) != 0 {
		t.Fatalf("the same bytes under cern: %d missing, %v; want none", len(resp.Missing), err)
	}
	size := int64(len(lhcBlob.data))
	if _, complete := s.Holds(cernBlob.m.Key()); !complete || s.ChunkBytes() != size {
		t.Fatalf("cern's blob complete %v, %d chunk bytes stored; want complete, %d", complete, s.ChunkBytes(), size)
	}
	for _, p := range []string{"lhc", "cern"} {
		if by, _ := s.Usage(p); p == "lhc" && by != size || p == "cern" && by != 2*size {
			t.Errorf("%s charged %d bytes", p, by)
		}
	}
	if err := s.Delete(lhcBlob.m.Key()); err != nil {
		t.Fatal(err)
	}
	if _, complete := s.Holds(cernBlob.m.Key()); !complete || s.ChunkBytes() != size {
		t.Fatalf("after deleting lhc's blob: cern's complete %v, %d chunk bytes; want complete, %d", complete, s.ChunkBytes(), size)
	}
	if err := s.Delete(cernBlob.m.Key()); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(otherBlob.m.Key()); err != nil {
		t.Fatal(err)
	}
	if s.ChunkBytes() != 0 || s.Len() != 0 {
		t.Errorf("after deleting every blob: %d chunk bytes, %d blobs", s.ChunkBytes(), s.Len())
	}
}
