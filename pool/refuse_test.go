package pool_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestRefusesBadJobs: forged, unsigned, foreign-CA, foreign-project,
// revoked, oversized, truncated and garbage jobs are refused with a reason
// and leave the node's store unchanged.
func TestRefusesBadJobs(t *testing.T) {
	pn := startPoolNet(t, 4, 0, 26)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := pn.net.Node(0)
	good := func(p *project.Project) *project.Prepared {
		spec, err := p.NewSpec("hashchain", nil, []string{"lhc"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.Sign(spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	lhc := pn.proj
	other, err := pn.net.NewProject(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Agent().Close()

	// A job of project "lhc" signed by a key certified by another CA.
	foreignCA, err := certs.NewAuthority("evil CA", time.Now().Add(-time.Hour), 24*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	fkey, _ := certs.GenerateKey(nil)
	fcert, err := foreignCA.Issue(certs.IssueRequest{PublicKey: fkey.Public().(ed25519.PublicKey), Role: certs.RoleProject, Name: "lhc",
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	fspec, _ := lhc.NewSpec("hashchain", nil, []string{"lhc"}, time.Hour)
	fspec.CertRef = job.CertRef(fcert.Raw)
	foreign, err := job.Sign(fspec, fkey)
	if err != nil {
		t.Fatal(err)
	}

	// Tampered copies of signed jobs: a Prepared caches its encoding, so
	// the tampering is done on a fresh job.Signed.
	g := good(lhc)
	forgedSig := bytes.Clone(g.Sig)
	forgedSig[3] ^= 1
	forged := &job.Signed{Spec: g.Spec, Sig: forgedSig}
	unsigned := &job.Signed{Spec: good(lhc).Spec}
	truncated := good(lhc).Encode()
	truncated = truncated[:len(truncated)-7]
	hugeSigned := &job.Signed{Spec: make([]byte, job.MaxSignedSize), Sig: make([]byte, 64)}

	cases := []struct {
		name    string
		from    *project.Project
		env     wire.JobEnvelope
		certs   [][]byte
		mention string
	}{
		{"forged", lhc, wire.JobEnvelope{Signed: forged.Encode()}, nil, "signature"},
		{"unsigned", lhc, wire.JobEnvelope{Signed: unsigned.Encode()}, nil, "signature"},
		{"truncated", lhc, wire.JobEnvelope{Signed: truncated}, nil, "malformed"},
		{"garbage", lhc, wire.JobEnvelope{Signed: []byte("not a job at all")}, nil, "malformed"},
		{"foreign CA", lhc, wire.JobEnvelope{Signed: foreign.Encode()}, [][]byte{fcert.Raw}, "not signed by the trusted CA"},
		{"another project's job", other, wire.JobEnvelope{Signed: good(lhc).Encode()}, nil, "may not submit"},
		{"not ready", lhc, wire.JobEnvelope{Signed: good(lhc).Encode(), State: job.State{Phase: job.Collected, At: 5}}, nil, "ready"},
		{"ready tombstone", lhc, wire.JobEnvelope{Signed: good(lhc).Encode(),
			State: job.State{Phase: job.Ready, Client: []byte("c"), Start: 1 << 62}}, nil, "never-claimed"},
		{"oversized", lhc, wire.JobEnvelope{Signed: hugeSigned.Encode()}, nil, "bytes"},
		{"no listing", lhc, wire.JobEnvelope{Signed: good(lhc).Encode()}, nil, "listing"},
		{"listing of another job", lhc, wire.JobEnvelope{Signed: good(lhc).Encode(), Listing: good(lhc).Listing}, nil, "listing does not match"},
	}
	before := target.Pool().Len()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &wire.StoreRequest{Replicate: true, Jobs: []wire.JobEnvelope{c.env},
				Certs: append([][]byte{c.from.Agent().Identity().Cert.Raw}, c.certs...)}
			var resp wire.StoreResponse
			err := c.from.Agent().Endpoint().Call(ctx, target.ID(), wire.ProtoJobStore, req, wire.MaxJobFrame, &resp)
			var msg string
			switch {
			case err != nil:
				msg = err.Error()
			case len(resp.Results) != 1:
				t.Fatalf("%d results", len(resp.Results))
			case resp.Results[0].Status == wire.StatusOK:
				t.Fatalf("%s job accepted", c.name)
			default:
				msg = resp.Results[0].Msg
			}
			if !strings.Contains(msg, c.mention) {
				t.Fatalf("refusal %q does not mention %q", msg, c.mention)
			}
			t.Logf("refused: %s", msg)
		})
	}
	if after := target.Pool().Len(); after != before {
		t.Fatalf("store changed: %d jobs before, %d after", before, after)
	}

	// A revoked project: its jobs are refused even when a node forwards them.
	revokedJob := good(other)
	rl, err := pn.net.CA.Revoke(nil, []*big.Int{other.Agent().Identity().Cert.SerialNumber}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	target.Endpoint().AdoptCRL(rl)
	forwarder := pn.net.Node(1)
	req := &wire.StoreRequest{Jobs: []wire.JobEnvelope{{Signed: revokedJob.Encode()}}, Certs: [][]byte{other.Agent().Identity().Cert.Raw}}
	var resp wire.StoreResponse
	if err := forwarder.Endpoint().Call(ctx, target.ID(), wire.ProtoJobStore, req, wire.MaxJobFrame, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Status == wire.StatusOK || !strings.Contains(resp.Results[0].Msg, "revoked") {
		t.Fatalf("revoked project's job: %+v", resp.Results)
	}
	if after := target.Pool().Len(); after != before {
		t.Fatalf("store changed: %d jobs before, %d after", before, after)
	}
}

// TestTooFewNodes: with fewer nodes than r, a submission fails with a
// clear error instead of claiming success.
func TestTooFewNodes(t *testing.T) {
	clock := testnet.NewClock(time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 3, Dir: t.TempDir(), Seed: 27, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	spec, _ := p.NewSpec("hashchain", nil, []string{"lhc"}, time.Hour)
	s, _ := p.Sign(spec)
	res := p.Submit(ctx, []*project.Prepared{s})
	if !errors.Is(res[0].Err, project.ErrTooFewReplicas) || res[0].Acks != 3 {
		t.Fatalf("submit to 3 nodes with r=5: acks %d, err %v", res[0].Acks, res[0].Err)
	}
	t.Logf("error: %v", res[0].Err)
	if !strings.Contains(res[0].Err.Error(), "3 of 5 replicas") {
		t.Fatalf("unclear error: %v", res[0].Err)
	}
}
