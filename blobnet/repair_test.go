package blobnet_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
)

// TestRepairAfterKill: the closest holder of a blob is killed; one repair
// round on every running node puts the blob on the new fifth closest
// (the second closest, now the closest, pushes it), and a client fetches
// it from the five. Control: before the round the newcomer lacks it.
func TestRepairAfterKill(t *testing.T) {
	bn := startBlobNet(t, 8, 6, blobnet.Config{})
	b := newBlob(t, "lhc", 5, 3<<20+17)
	key := b.m.Key()
	bn.upload(t, b)
	before := bn.net.TrueClosest(key, 5)
	if err := bn.net.Kill(bn.net.Index(before[0])); err != nil {
		t.Fatal(err)
	}
	after := bn.net.TrueClosest(key, 5)
	newcomer := after[4]
	if slices.Contains(before, newcomer) {
		t.Fatalf("the new fifth closest %s was among the five before", newcomer)
	}
	if held, _ := bn.service(t, newcomer).Holds(key); held {
		t.Fatal("control: the newcomer holds the blob before any repair")
	}
	ctx := context.Background()
	st := bn.repairAll(ctx)
	bn.checkHeldBy(t, key, after)
	if st.Repaired != 1 || st.ChunksSent != len(b.chunks) || st.BytesSent != int64(len(b.data)) {
		t.Errorf("repair: %d nodes repaired with %d chunks, %d bytes; want 1 with %d, %d", st.Repaired, st.ChunksSent, st.BytesSent, len(b.chunks), len(b.data))
	}
	again := bn.repairAll(ctx)
	if again.ChunksSent != 0 || again.Failed != 0 {
		t.Errorf("second round sent %d chunks, %d failed; want none", again.ChunksSent, again.Failed)
	}
	client := bn.agent(t, certs.RoleClient, "alice")
	res, err := blobclient.Fetch(ctx, client, key, nil)
	if err != nil || !bytes.Equal(res.Data, b.data) {
		t.Fatalf("fetch after repair: %v", err)
	}
}

// TestHandOff: a node that holds a blob but is none of its r closest
// offers it to them in its repair round and deletes its copy, since they
// all hold it. Control: it holds the blob until that round.
func TestHandOff(t *testing.T) {
	bn := startBlobNet(t, 8, 7, blobnet.Config{})
	b := newBlob(t, "lhc", 6, 2<<20)
	key := b.m.Key()
	bn.upload(t, b)
	closest := bn.net.TrueClosest(key, 5)
	var far *blobnet.Service
	for _, nd := range bn.net.Live() {
		if !slices.Contains(closest, nd.ID()) {
			far = nd.Blobs()
			if _, err := bn.push(nd.ID(), sign(t, bn.proj, b), b); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if _, complete := far.Holds(key); !complete {
		t.Fatal("control: the far node does not hold the blob it was sent")
	}
	st := far.RepairRound(context.Background())
	if st.Handed != 1 || far.Len() != 0 || far.ChunkBytes() != 0 {
		t.Fatalf("far node's round: %+v; it holds %d blobs, %d chunk bytes; want it handed on and deleted", st, far.Len(), far.ChunkBytes())
	}
	bn.checkHeldBy(t, key, closest)
}

// TestExpiredBlobDeleted: a blob whose statement expired, on the nodes'
// clock past its expiry by 2·T_skew, is deleted by every holder's next
// round, chunks and all, and no longer served. Control: a round before
// then keeps it.
func TestExpiredBlobDeleted(t *testing.T) {
	bn := startBlobNet(t, 8, 8, blobnet.Config{})
	b := newBlob(t, "lhc", 7, 1<<20+1)
	key := b.m.Key()
	bn.upload(t, b) // lives a day
	ctx := context.Background()
	bn.clock.Advance(24 * time.Hour)
	if st := bn.repairAll(ctx); st.Expired != 0 || len(bn.holders(key)) != 5 {
		t.Fatalf("control: at the expiry, within the margin: %d expired, %d holders", st.Expired, len(bn.holders(key)))
	}
	bn.clock.Advance(time.Duration(job.ExpiryMarginMS) * time.Millisecond)
	if st := bn.repairAll(ctx); st.Expired != 5 {
		t.Fatalf("past the margin: %d holders deleted it, want 5", st.Expired)
	}
	for _, nd := range bn.net.Live() {
		if nd.Blobs().Len() != 0 || nd.Blobs().ChunkBytes() != 0 {
			t.Errorf("node %s still holds %d blobs, %d chunk bytes", nd.ID(), nd.Blobs().Len(), nd.Blobs().ChunkBytes())
		}
		if b, n := nd.Blobs().Usage("lhc"); b != 0 || n != 0 {
			t.Errorf("node %s still charges lhc %d bytes, %d blobs", nd.ID(), b, n)
		}
	}
	client := bn.agent(t, certs.RoleClient, "alice")
	if _, _, err := blobclient.Sources(ctx, client, key); err == nil {
		t.Error("an expired blob is still served")
	}
}

// TestRestartKeepsBlobs: a holder restarted from its data directory
// holds the blob whole again and charges its project as before.
func TestRestartKeepsBlobs(t *testing.T) {
	bn := startBlobNet(t, 8, 9, blobnet.Config{})
	b := newBlob(t, "lhc", 8, 2<<20+3)
	key := b.m.Key()
	bn.upload(t, b)
	p := bn.holders(key)[0]
	i := bn.net.Index(p)
	bytesBefore, blobsBefore := bn.net.Node(i).Blobs().Usage("lhc")
	if err := bn.net.Kill(i); err != nil {
		t.Fatal(err)
	}
	if err := bn.net.Restart(context.Background(), i); err != nil {
		t.Fatal(err)
	}
	s := bn.net.Node(i).Blobs()
	if _, complete := s.Holds(key); !complete {
		t.Fatal("restarted holder lost the blob")
	}
	if by, n := s.Usage("lhc"); by != bytesBefore || n != blobsBefore || s.ChunkBytes() != int64(len(b.data)) {
		t.Errorf("after restart lhc uses %d bytes, %d blobs (before %d, %d); %d chunk bytes held", by, n, bytesBefore, blobsBefore, s.ChunkBytes())
	}
}
