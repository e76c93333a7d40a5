package blobnet_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// blobNet is a network of nodes with the project lhc on a test clock.
type blobNet struct {
	net   *testnet.Network
	clock *testnet.Clock
	proj  *agent.Agent
}

// startBlobNet starts nodes nodes, seeded, with the blob config cfg.
func startBlobNet(t *testing.T, nodes int, seed uint64, cfg blobnet.Config) *blobNet {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: nodes, Seed: seed, Blob: cfg})
	return &blobNet{net: f.Net, clock: f.Clock, proj: f.Project.Agent()}
}

// agent starts a party of the role on the network.
func (bn *blobNet) agent(t *testing.T, role certs.Role, name string) *agent.Agent {
	t.Helper()
	a, err := bn.net.NewAgent(context.Background(), role, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// testBlob is a blob of size random bytes (seeded) of project.
type testBlob struct {
	data   []byte
	m      *blob.Manifest
	chunks [][]byte
}

func newBlob(t testing.TB, project string, seed uint64, size int) *testBlob {
	t.Helper()
	data := make([]byte, size)
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	_, _ = rand.NewChaCha8(s).Read(data)
	m, chunks, err := blob.Split(project, blob.KindInput, data)
	if err != nil {
		t.Fatal(err)
	}
	return &testBlob{data: data, m: m, chunks: chunks}
}

// sign signs a statement for b by a, living a day.
func sign(t testing.TB, a *agent.Agent, b *testBlob) *blob.SignedStatement {
	t.Helper()
	s, err := blobclient.Statement(a, b.m, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// upload uploads b as the project, failing the test on an error.
func (bn *blobNet) upload(t testing.TB, b *testBlob) *blobclient.Uploaded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up, err := blobclient.Upload(ctx, bn.proj, sign(t, bn.proj, b), b.m, b.chunks)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return up
}

// chunkOf reads b's chunks by CID.
func chunkOf(b *testBlob) blobclient.ChunkFunc {
	cids, _ := b.m.ChunkCIDs()
	return func(c cid.Cid) ([]byte, error) {
		if i := slices.Index(cids, c); i >= 0 {
			return b.chunks[i], nil
		}
		return nil, errors.New("not a chunk of the blob")
	}
}

// push offers b under statement st to node p as the project, without
// placement, and sends what p lacks.
func (bn *blobNet) push(p peer.ID, st *blob.SignedStatement, b *testBlob) (blobclient.Pushed, error) {
	offer := &wire.BlobOffer{Statement: st.Encode(), Manifest: b.m.Encode()}
	return blobclient.Push(context.Background(), bn.proj.Endpoint(), p, offer, chunkOf(b), blobclient.PushConfig{})
}

// holders lists the running nodes that hold blob key whole.
func (bn *blobNet) holders(key []byte) []peer.ID {
	var out []peer.ID
	for _, nd := range bn.net.Live() {
		if _, complete := nd.Blobs().Holds(key); complete {
			out = append(out, nd.ID())
		}
	}
	return out
}

// checkHeldBy fails the test unless exactly the nodes want hold key whole.
func (bn *blobNet) checkHeldBy(t *testing.T, key []byte, want []peer.ID) {
	t.Helper()
	got := bn.holders(key)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("blob held whole by %v, want %v", got, want)
	}
}

// service returns the blob service of the running node p.
func (bn *blobNet) service(t *testing.T, p peer.ID) *blobnet.Service {
	t.Helper()
	i := bn.net.Index(p)
	if i < 0 {
		t.Fatalf("node %s not running", p)
	}
	return bn.net.Node(i).Blobs()
}

// repairAll runs one repair round on every running node, in index order.
func (bn *blobNet) repairAll(ctx context.Context) blobnet.RoundStats {
	var sum blobnet.RoundStats
	for _, nd := range bn.net.Live() {
		st := nd.Blobs().RepairRound(ctx)
		sum.Spread += st.Spread
		sum.Repaired += st.Repaired
		sum.ChunksSent += st.ChunksSent
		sum.BytesSent += st.BytesSent
		sum.Failed += st.Failed
		sum.Expired += st.Expired
		sum.Handed += st.Handed
	}
	return sum
}

// statusOf is the reply status of a refused call, or OK.
func statusOf(err error) wire.Status {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Status
	}
	return wire.StatusOK
}
