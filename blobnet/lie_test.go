package blobnet_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blob/fetch"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
)

// TestAlteredChunkFetchedElsewhere: one holder's store has every chunk
// of the blob altered (a flipped byte each); a client's fetch from the
// five holders catches the first bad chunk it gets from that node,
// attributes it to the node, asks it no more and takes every chunk from
// the other four: the blob arrives whole. Control: the altered node does
// serve the bad bytes when asked directly, so the fetch did not pass by
// luck.
func TestAlteredChunkFetchedElsewhere(t *testing.T) {
	bn := startBlobNet(t, 8, 5, blobnet.Config{})
	b := newBlob(t, "lhc", 4, 5<<20)
	key := b.m.Key()
	bn.upload(t, b)
	client := bn.agent(t, certs.RoleClient, "alice")
	ctx := context.Background()
	m, sources, err := blobclient.Sources(ctx, client, key)
	if err != nil || len(sources) != 5 {
		t.Fatalf("sources: %d, %v", len(sources), err)
	}
	liar := sources[2].ID()
	i := -1
	for j, nd := range bn.net.Live() {
		if nd.ID().String() == liar {
			i = j
		}
	}
	nd := bn.net.Live()[i]
	cids, _ := b.m.ChunkCIDs()
	for k, c := range cids {
		bad := bytes.Clone(b.chunks[k])
		bad[k] ^= 0xff
		if err := nd.Store().Put(blobnet.ChunkKey(c), bad); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sources[2].GetChunk(ctx, cids[0])
	if err != nil || !errors.Is(blob.VerifyChunk(cids[0], got), blob.ErrBadChunk) {
		t.Fatalf("control: the altered node served %d bytes (%v) that verify: %v", len(got), err, blob.VerifyChunk(cids[0], got))
	}

	res, err := (&fetch.Fetcher{Sources: sources}).Fetch(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Data, b.data) {
		t.Fatal("fetched blob differs from the uploaded one")
	}
	if len(res.Misbehaving) != 1 || res.Misbehaving[0].Source != liar || !errors.Is(res.Misbehaving[0].Err, blob.ErrBadChunk) {
		t.Fatalf("misbehaving: %+v, want the one bad chunk from %s", res.Misbehaving, liar)
	}
	if st := res.Sources[liar]; st.Bad != 1 || st.Chunks != 0 {
		t.Errorf("liar's stats %+v, want one bad chunk and no good one", *st)
	}
	good := 0
	for id, st := range res.Sources {
		if id != liar {
			good += st.Chunks
		}
	}
	if good != len(cids) {
		t.Errorf("%d good chunks from the honest holders, want %d", good, len(cids))
	}
}
