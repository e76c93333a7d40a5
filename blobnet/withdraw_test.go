package blobnet_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// TestWithdrawnBlobDeleted: the project's withdrawal (a later statement
// whose life ends now) supersedes the upload's day-long statement at the
// blob's nodes; their next sweep past the skew margin deletes the blob,
// and afterwards a node refuses the older statement — a holder that
// missed the withdrawal cannot place the blob back — while a newer upload
// of the same blob is taken. Control: a sweep before the withdrawal's
// margin has passed keeps the blob.
func TestWithdrawnBlobDeleted(t *testing.T) {
	bn := startBlobNet(t, 8, 21, blobnet.Config{})
	b := newBlob(t, "lhc", 21, 1<<20+17)
	key := b.m.Key()
	old := sign(t, bn.proj, b)
	if _, err := blobclient.Upload(context.Background(), bn.proj, old, b.m, b.chunks); err != nil {
		t.Fatal(err)
	}
	holders := bn.holders(key)
	if len(holders) != 5 {
		t.Fatalf("%d holders after the upload, want 5", len(holders))
	}
	ctx := context.Background()
	bn.clock.Advance(time.Minute)
	took, err := blobclient.Withdraw(ctx, bn.proj, b.m, 0, holders...)
	if err != nil || len(took) != 5 {
		t.Fatalf("withdraw: %d nodes took it, %v", len(took), err)
	}
	if st := bn.repairAll(ctx); st.Expired != 0 || len(bn.holders(key)) != 5 {
		t.Fatalf("control: within the margin: %d expired, %d holders", st.Expired, len(bn.holders(key)))
	}
	bn.clock.Advance(time.Duration(job.ExpiryMarginMS)*time.Millisecond + time.Second)
	if st := bn.repairAll(ctx); st.Expired != 5 {
		t.Fatalf("past the margin: %d holders deleted it, want 5", st.Expired)
	}
	for _, p := range holders {
		if held, _ := bn.service(t, p).Holds(key); held {
			t.Fatalf("node %s still holds the withdrawn blob", p)
		}
	}
	// A node that missed the withdrawal offers the blob with the
	// upload's statement (still live): refused as withdrawn.
	_, err = bn.push(holders[0], old, b)
	if statusOf(err) != wire.StatusGone || bn.service(t, holders[0]).Refused(blobnet.ReasonWithdrawn) != 1 {
		t.Fatalf("the superseded statement: %v (status %v), want refused as withdrawn", err, statusOf(err))
	}
	// The project uploads the blob again, with a statement made later.
	if _, err := bn.push(holders[0], sign(t, bn.proj, b), b); err != nil {
		t.Fatalf("a new upload after the withdrawal: %v", err)
	}
	if _, complete := bn.service(t, holders[0]).Holds(key); !complete {
		t.Fatal("the new upload is not held")
	}
}

// TestLaterStatementExtends: a later statement with a longer life (the
// project submitted more jobs naming the blob) replaces the upload's at a
// holder, which keeps the blob past the first statement's expiry, also
// after a restart. Control: a statement made earlier than the held one
// changes nothing.
func TestLaterStatementExtends(t *testing.T) {
	bn := startBlobNet(t, 8, 22, blobnet.Config{})
	b := newBlob(t, "lhc", 22, 300_001)
	key := b.m.Key()
	first := sign(t, bn.proj, b) // a day
	if _, err := blobclient.Upload(context.Background(), bn.proj, first, b.m, b.chunks); err != nil {
		t.Fatal(err)
	}
	p := bn.holders(key)[0]
	bn.clock.Advance(time.Hour)
	longer, err := blobclient.Statement(bn.proj, b.m, 72*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bn.push(p, longer, b); err != nil {
		t.Fatal(err)
	}
	if _, err := bn.push(p, first, b); err != nil { // earlier: kept as it is
		t.Fatal(err)
	}
	i := bn.net.Index(p)
	if err := bn.net.Kill(i); err != nil {
		t.Fatal(err)
	}
	if err := bn.net.Restart(context.Background(), i); err != nil {
		t.Fatal(err)
	}
	bn.clock.Advance(24*time.Hour + time.Duration(job.ExpiryMarginMS)*time.Millisecond)
	bn.net.Node(i).Blobs().ExpireNow(nil)
	if _, complete := bn.net.Node(i).Blobs().Holds(key); !complete {
		t.Fatal("the holder deleted the blob at the first statement's expiry: the later, longer one did not replace it")
	}
}

// TestWithdrawalSkewedClocks: holders whose clocks are 8 min behind and
// ahead (within T_skew) take the withdrawal as the others do, and each
// deletes the blob once its own clock is past the withdrawal by the skew
// margin — the one behind last. Control: before then the one behind
// still holds it.
func TestWithdrawalSkewedClocks(t *testing.T) {
	bn := startBlobNet(t, 8, 23, blobnet.Config{})
	b := newBlob(t, "lhc", 23, 500_003)
	key := b.m.Key()
	bn.upload(t, b)
	holders := bn.holders(key)
	behind, ahead := bn.net.Index(holders[0]), bn.net.Index(holders[1])
	bn.net.SetClockOffset(behind, -8*time.Minute)
	bn.net.SetClockOffset(ahead, 8*time.Minute)
	ctx := context.Background()
	bn.clock.Advance(time.Minute)
	if took, err := blobclient.Withdraw(ctx, bn.proj, b.m, 0, holders...); err != nil || len(took) != len(holders) {
		t.Fatalf("withdraw: %d of %d nodes took it, %v", len(took), len(holders), err)
	}
	bn.clock.Advance(time.Duration(job.ExpiryMarginMS)*time.Millisecond + time.Second)
	bn.repairAll(ctx)
	if held, _ := bn.service(t, holders[0]).Holds(key); !held {
		t.Fatal("control: the node 8 min behind deleted the blob before its clock passed the margin")
	}
	if held, _ := bn.service(t, holders[1]).Holds(key); held {
		t.Fatal("the node 8 min ahead still holds the withdrawn blob past the margin")
	}
	bn.clock.Advance(9 * time.Minute)
	bn.repairAll(ctx)
	for _, p := range holders {
		if held, _ := bn.service(t, p).Holds(key); held {
			t.Fatalf("node %s still holds the withdrawn blob", p)
		}
	}
}
