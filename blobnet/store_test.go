package blobnet_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/up-pool/up/blob/cache"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// TestStoreFetchesOnce: a client's blob store (client.Blobs) fetches an
// uploaded blob into its cache and returns the file, whose bytes are the
// blob's; a second job naming the blob gets the cached file without one
// more chunk from the nodes; the blob asked for as another project's is
// refused. Control: a store over a new, empty cache fetches the chunks
// again (the zero is the cache's doing).
func TestStoreFetchesOnce(t *testing.T) {
	bn := startBlobNet(t, 8, 5, blobnet.Config{})
	b := newBlob(t, "lhc", 2, 3<<20)
	key := b.m.Key()
	bn.upload(t, b)
	client := bn.agent(t, certs.RoleClient, "bob")
	ctx := context.Background()
	served := func() int { // chunk requests the nodes answered
		n := 0
		for _, nd := range bn.net.Live() {
			mfs, err := nd.Endpoint().Metrics().Registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != "up_rpc_received_total" {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetValue() == wire.ProtoChunkGet {
							n += int(m.GetCounter().GetValue())
						}
					}
				}
			}
		}
		return n
	}
	open := func() *blobclient.Store {
		c, err := cache.Open(t.TempDir(), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		s, err := blobclient.NewStore(client, c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	path, err := s.Fetch(ctx, "lhc", key)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, b.data) {
		t.Fatalf("the fetched file holds %d bytes (equal: %v), err %v", len(got), bytes.Equal(got, b.data), err)
	}
	before := served()
	if again, err := s.Fetch(ctx, "lhc", key); err != nil || again != path {
		t.Fatalf("second fetch: %q %v, want the cached %q", again, err, path)
	}
	if d := served() - before; d != 0 {
		t.Errorf("second fetch asked the nodes for %d chunks, want none", d)
	}
	if _, err := s.Fetch(ctx, "cms", key); err == nil || !strings.Contains(err.Error(), `project "lhc"'s, not "cms"'s`) {
		t.Errorf("fetch as another project's blob: %v, want a refusal naming both", err)
	}
	before = served()
	if _, err := open().Fetch(ctx, "lhc", key); err != nil {
		t.Fatal(err)
	}
	if d := served() - before; d < len(b.chunks) {
		t.Errorf("control: a fresh store asked the nodes for %d chunks, want the blob's %d at least", d, len(b.chunks))
	}
}
