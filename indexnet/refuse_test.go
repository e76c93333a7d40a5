package indexnet_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestRefusals: unsigned, forged, foreign-project and malformed entries
// are refused with a reason and change nothing; so are bad queries, and
// writes from anyone but a node.
func TestRefusals(t *testing.T) {
	in := startIdxNet(t, 6, 45, testnet.Options{})
	rng := rand.New(rand.NewPCG(45, 45))
	lhc := in.project(t, "lhc")
	keys := in.submit(t, lhc, 3, rng)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := in.net.Node(0)
	rogue, err := in.net.NewAgent(ctx, certs.RoleNode, "rogue")
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	env, err := in.net.Node(in.net.Holders(keys[0])[0]).Pool().Envelope(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	cert := lhc.Agent().Identity().Cert.Raw
	good := env.Listing
	forged := append([]byte(nil), good...)
	forged[len(forged)-3] ^= 1
	unsigned, l, _ := job.DecodeListing(good)
	unsigned.Sig = make([]byte, 64)
	// A listing that names project lhc but is signed by another project.
	other := in.project(t, "cms")
	foreign, _ := job.SignListing(l, other.Agent().Identity().Key)

	before := target.Index().Len()
	for _, c := range []struct {
		name    string
		write   wire.IndexWrite
		certs   [][]byte
		mention string
	}{
		{"forged", wire.IndexWrite{Keyword: "lhc", Listing: forged}, [][]byte{cert}, "signature"},
		{"unsigned", wire.IndexWrite{Keyword: "lhc", Listing: unsigned.Encode()}, [][]byte{cert}, "signature"},
		{"foreign project", wire.IndexWrite{Keyword: "lhc", Listing: foreign.Encode()}, [][]byte{other.Agent().Identity().Cert.Raw}, "signature"},
		{"keyword not allowed", wire.IndexWrite{Keyword: "gpu:big", Listing: good}, [][]byte{cert}, "does not allow"},
		{"malformed", wire.IndexWrite{Keyword: "lhc", Listing: []byte("junk")}, [][]byte{cert}, "malformed"},
	} {
		var resp wire.IndexWriteResponse
		err := rogue.Endpoint().Call(ctx, target.ID(), wire.ProtoIndexWrite,
			&wire.IndexWriteRequest{Entries: []wire.IndexWrite{c.write}, Certs: c.certs}, wire.MaxIndexFrame, &resp)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(resp.Results) != 1 || resp.Results[0].Status == wire.StatusOK || !strings.Contains(resp.Results[0].Msg, c.mention) {
			t.Fatalf("%s: %+v, want a refusal mentioning %q", c.name, resp.Results, c.mention)
		}
		t.Logf("%s: %s", c.name, resp.Results[0].Msg)
	}
	if after := target.Index().Len(); after != before {
		t.Fatalf("index changed: %d entries before, %d after", before, after)
	}

	// Only nodes write or withdraw.
	cl := in.client(t, "worker")
	err = cl.Endpoint().Call(ctx, target.ID(), wire.ProtoIndexWrite,
		&wire.IndexWriteRequest{Entries: []wire.IndexWrite{{Keyword: "lhc", Listing: good}}, Certs: [][]byte{cert}}, wire.MaxIndexFrame, &wire.IndexWriteResponse{})
	if err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("client write: %v", err)
	}

	// Bad queries.
	for _, c := range []struct {
		name    string
		req     wire.IndexQueryRequest
		mention string
	}{
		{"unparsable", wire.IndexQueryRequest{Query: "lhc AND (", Keyword: "lhc", N: 1}, "bad query"},
		{"keyword not required", wire.IndexQueryRequest{Query: "lhc OR cms", Keyword: "lhc", N: 1}, "every match"},
		{"too long", wire.IndexQueryRequest{Query: strings.Repeat("a ", 600), Keyword: "a", N: 1}, "bytes"},
		{"too many", wire.IndexQueryRequest{Query: "lhc", Keyword: "lhc", N: wire.MaxIndexHits + 1}, "entries"},
	} {
		err := cl.Endpoint().Call(ctx, target.ID(), wire.ProtoIndexQuery, &c.req, wire.MaxIndexFrame, &wire.IndexQueryResponse{})
		if err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Fatalf("%s query: %v, want an error mentioning %q", c.name, err, c.mention)
		}
		t.Logf("%s query: %v", c.name, err)
	}
	if _, err := cl.Index().Find(ctx, "a OR b", 1); err == nil || !strings.Contains(err.Error(), "every match") {
		t.Fatalf("find without a primary keyword: %v", err)
	}
}
