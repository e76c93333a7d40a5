package blobnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// statement signs a statement for b of project lhc (lhc's certificate
// reference), created at created and living lifetime, with key.
func statement(t *testing.T, lhc *agent.Agent, b *testBlob, created time.Time, lifetime time.Duration, key ed25519.PrivateKey) *blob.SignedStatement {
	t.Helper()
	s, err := blob.SignStatement(&blob.Statement{
		Version: blob.StatementVersion, Project: "lhc", Manifest: b.m.Key(), CertRef: job.CertRef(lhc.Identity().Cert.Raw),
		Created: created.UnixMilli(), Lifetime: lifetime.Milliseconds(),
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// offer sends one offer from ep's party to node p.
func offer(ep *overlay.Endpoint, p peer.ID, o *wire.BlobOffer) (*wire.BlobOfferResponse, error) {
	var resp wire.BlobOfferResponse
	err := ep.Call(context.Background(), p, wire.ProtoBlobOffer, o, wire.MaxBlobOfferReply, &resp)
	return &resp, err
}

// TestRefusedStatements: offers a node must refuse — a statement signed
// by another key than its project's certificate's, one with a zero
// signature, one that expired (beyond the 2·T_skew margin) or is dated
// beyond it ahead, a blob offered by another project, a node's offer
// without the certificate the statement names or with another one —
// each get a clear error with its status, are counted by reason and
// store nothing. Control: the right statement is then accepted.
func TestRefusedStatements(t *testing.T) {
	bn := startBlobNet(t, 8, 10, blobnet.Config{})
	b := newBlob(t, "lhc", 9, 2<<20)
	lhc := bn.proj
	now := bn.clock.Now()
	nodes := bn.net.Live()
	target := nodes[0]
	s := target.Blobs()
	_, otherKey, _ := ed25519.GenerateKey(bytes.NewReader(make([]byte, 64)))
	zero := statement(t, lhc, b, now, time.Hour, lhc.Identity().Key)
	zero.Sig = make([]byte, ed25519.SignatureSize)
	cern := bn.agent(t, certs.RoleProject, "cern")
	client := bn.agent(t, certs.RoleClient, "alice")
	good := statement(t, lhc, b, now, time.Hour, lhc.Identity().Key)
	for _, c := range []struct {
		name   string
		from   *agent.Agent // nil: another node
		st     *blob.SignedStatement
		cert   []byte
		status wire.Status
		reason string
		says   string
	}{
		{"signed by another key", lhc, statement(t, lhc, b, now, time.Hour, otherKey), nil, wire.StatusUnauthorized, blobnet.ReasonSignature, "signature does not verify"},
		{"zero signature", lhc, zero, nil, wire.StatusUnauthorized, blobnet.ReasonSignature, "signature does not verify"},
		{"expired", lhc, statement(t, lhc, b, now.Add(-49*time.Hour), 48*time.Hour, lhc.Identity().Key), nil, wire.StatusGone, blobnet.ReasonExpired, "statement expired at"},
		{"dated ahead", lhc, statement(t, lhc, b, now.Add(2*time.Hour), time.Hour, lhc.Identity().Key), nil, wire.StatusBadRequest, blobnet.ReasonFuture, "ahead of this node's clock"},
		{"another project's blob", cern, good, nil, wire.StatusUnauthorized, blobnet.ReasonWrongProject, `project "cern" may not offer blobs of project "lhc"`},
		{"node without the certificate", nil, good, nil, wire.StatusBadRequest, blobnet.ReasonCertificate, "was not sent"},
		{"node with another certificate", nil, good, client.Identity().Cert.Raw, wire.StatusUnauthorized, blobnet.ReasonCertificate, "not the one its statement names"},
	} {
		o := &wire.BlobOffer{Statement: c.st.Encode(), Manifest: b.m.Encode(), Cert: c.cert}
		var err error
		if c.from != nil {
			_, err = offer(c.from.Endpoint(), target.ID(), o)
		} else {
			_, err = offer(nodes[1].Endpoint(), target.ID(), o)
		}
		if statusOf(err) != c.status || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %s saying %q", c.name, err, c.status, c.says)
		}
		if n := s.Refused(c.reason); n == 0 {
			t.Errorf("%s: not counted as %s", c.name, c.reason)
		}
		if held, _ := s.Holds(b.m.Key()); held || s.Len() != 0 {
			t.Fatalf("%s: the node stored the blob", c.name)
		}
	}
	if by, n := s.Usage("lhc"); by != 0 || n != 0 {
		t.Errorf("refused offers charged lhc %d bytes, %d blobs", by, n)
	}
	// Control: the project's own statement, and a node's offer carrying
	// the project's certificate, are accepted.
	if resp, err := offer(lhc.Endpoint(), target.ID(), &wire.BlobOffer{Statement: good.Encode(), Manifest: b.m.Encode()}); err != nil || len(resp.Missing) != 2 {
		t.Fatalf("control: the right statement: %v, %d missing", err, len(resp.Missing))
	}
	o := &wire.BlobOffer{Statement: good.Encode(), Manifest: b.m.Encode(), Cert: lhc.Identity().Cert.Raw}
	if _, err := offer(nodes[1].Endpoint(), nodes[2].ID(), o); err != nil {
		t.Fatalf("control: a node's offer with the certificate: %v", err)
	}
}

// TestRefusedChunks: chunks a node must refuse — one the blob's manifest
// does not list, one listed whose bytes were altered, one of a blob never
// offered, one sent by another project — each get a clear error, are
// counted and store nothing; the blob still lacks every chunk. Control:
// the right chunks are then stored and complete the blob.
func TestRefusedChunks(t *testing.T) {
	bn := startBlobNet(t, 8, 11, blobnet.Config{})
	b := newBlob(t, "lhc", 10, 2<<20)
	other := newBlob(t, "lhc", 11, 1<<20)
	lhc := bn.proj
	target := bn.net.Live()[0]
	s := target.Blobs()
	o := &wire.BlobOffer{Statement: sign(t, lhc, b).Encode(), Manifest: b.m.Encode()}
	if _, err := offer(lhc.Endpoint(), target.ID(), o); err != nil {
		t.Fatal(err)
	}
	cids, _ := b.m.ChunkCIDs()
	otherCIDs, _ := other.m.ChunkCIDs()
	altered := bytes.Clone(b.chunks[0])
	altered[7]++
	cern := bn.agent(t, certs.RoleProject, "cern")
	for _, c := range []struct {
		name   string
		from   *agent.Agent
		put    *wire.ChunkPut
		status wire.Status
		reason string
		says   string
	}{
		{"unlisted", lhc, &wire.ChunkPut{Blob: b.m.Key(), Chunk: otherCIDs[0].Bytes(), Data: other.chunks[0]}, wire.StatusBadRequest, blobnet.ReasonUnlisted, "not listed"},
		{"altered", lhc, &wire.ChunkPut{Blob: b.m.Key(), Chunk: cids[0].Bytes(), Data: altered}, wire.StatusBadRequest, blobnet.ReasonBadChunk, "does not match its CID"},
		{"blob not offered", lhc, &wire.ChunkPut{Blob: other.m.Key(), Chunk: otherCIDs[0].Bytes(), Data: other.chunks[0]}, wire.StatusNotFound, blobnet.ReasonUnknownBlob, "offer it first"},
		{"another project", cern, &wire.ChunkPut{Blob: b.m.Key(), Chunk: cids[0].Bytes(), Data: b.chunks[0]}, wire.StatusUnauthorized, blobnet.ReasonWrongProject, `project "cern" may not send chunks`},
	} {
		err := c.from.Endpoint().Call(context.Background(), target.ID(), wire.ProtoChunkPut, c.put, 1<<10, &wire.ChunkPutResponse{})
		if statusOf(err) != c.status || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %s saying %q", c.name, err, c.status, c.says)
		}
		if n := s.Refused(c.reason); n != 1 {
			t.Errorf("%s: counted %d times as %s, want once", c.name, n, c.reason)
		}
	}
	if s.ChunkBytes() != 0 || s.HasChunk(otherCIDs[0]) || s.HasChunk(cids[0]) {
		t.Fatalf("refused chunks stored: %d bytes", s.ChunkBytes())
	}
	if resp, err := offer(lhc.Endpoint(), target.ID(), o); err != nil || len(resp.Missing) != 2 {
		t.Fatalf("after the refusals the node lacks %d chunks (%v), want both", len(resp.Missing), err)
	}
	// Control: the right chunks complete the blob.
	pushed, err := bn.push(target.ID(), sign(t, lhc, b), b)
	if err != nil || !pushed.Complete || pushed.Sent != 2 {
		t.Fatalf("control: push of the right chunks: %+v, %v", pushed, err)
	}
}

// TestQuota: a project over its per-node quota — by bytes, then by
// blobs — is refused with StatusQuota and a message saying so, and
// nothing of the refused blob is stored or charged. Controls: a blob
// that fits is taken up to the bound exactly, offering a held blob again
// charges nothing, and another project still has its own quota.
func TestQuota(t *testing.T) {
	bn := startBlobNet(t, 8, 12, blobnet.Config{MaxProjectBlobs: 2, MaxProjectBytes: 3 << 20})
	lhc := bn.proj
	target := bn.net.Live()[0]
	s := target.Blobs()
	send := func(a *agent.Agent, b *testBlob) error {
		st, err := blobclient.Statement(a, b.m, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, err = offer(a.Endpoint(), target.ID(), &wire.BlobOffer{Statement: st.Encode(), Manifest: b.m.Encode()})
		return err
	}
	first, tooBig, fits, oneMore := newBlob(t, "lhc", 20, 2<<20), newBlob(t, "lhc", 21, 1<<20+1), newBlob(t, "lhc", 22, 1<<20), newBlob(t, "lhc", 23, 10)
	if err := send(lhc, first); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    *testBlob
		ok   bool
	}{
		{"over the bytes", tooBig, false},
		{"up to the bytes", fits, true},
		{"held already", first, true},
		{"over the blobs", oneMore, false},
	} {
		err := send(lhc, c.b)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && (statusOf(err) != wire.StatusQuota || !strings.Contains(err.Error(), `project "lhc" is over its quota on this node`)):
			t.Errorf("%s: %v, want over quota", c.name, err)
		case !c.ok:
			if held, _ := s.Holds(c.b.m.Key()); held {
				t.Errorf("%s: refused blob stored", c.name)
			}
		}
	}
	if by, n := s.Usage("lhc"); by != 3<<20 || n != 2 {
		t.Errorf("lhc charged %d bytes, %d blobs; want %d, 2", by, n, 3<<20)
	}
	if n := s.Refused(blobnet.ReasonQuota); n != 2 {
		t.Errorf("%d quota refusals counted, want 2", n)
	}
	cern := bn.agent(t, certs.RoleProject, "cern")
	if err := send(cern, newBlob(t, "cern", 24, 2<<20)); err != nil {
		t.Errorf("control: another project's blob: %v", err)
	}
}
