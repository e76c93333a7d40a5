package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// creditNet is a network of nodes with two projects and a client.
type creditNet struct {
	net      *testnet.Network
	clock    *testnet.Clock
	projects map[string]*agent.Agent
	client   *agent.Agent
}

func startCreditNet(t *testing.T, nodes int, seed uint64) *creditNet {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: nodes, Seed: seed})
	cn := &creditNet{net: f.Net, clock: f.Clock, projects: map[string]*agent.Agent{"lhc": f.Project.Agent()}}
	cn.projects["climate"] = cn.agent(t, certs.RoleProject, "climate")
	cn.client = cn.agent(t, certs.RoleClient, "vol")
	return cn
}

func (cn *creditNet) agent(t *testing.T, role certs.Role, name string) *agent.Agent {
	t.Helper()
	a, err := cn.net.NewAgent(context.Background(), role, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func (cn *creditNet) clientKey() ed25519.PublicKey {
	return cn.client.Identity().Key.Public().(ed25519.PublicKey)
}

// receipt is project's receipt seq to the client, crediting n results on
// top of prev, signed by signer's key (the project's own unless named).
func (cn *creditNet) receipt(t *testing.T, project string, seq uint64, prev, n int, signer string) []byte {
	t.Helper()
	p := cn.projects[project].Identity()
	r := &credit.Receipt{Version: credit.Version, Project: project, CertRef: job.CertRef(p.Cert.Raw), Client: cn.clientKey(),
		Seq: seq, Total: uint64(prev + n), Results: uint64(prev + n), Created: cn.clock.Now().UnixMilli()}
	for i := range n {
		r.Entries = append(r.Entries, credit.Entry{Unit: int64(prev + i + 1), Job: []byte{1, 0x71, byte(i)}, Amount: 1, At: r.Created})
	}
	key := p.Key
	if signer != "" {
		key = cn.projects[signer].Identity().Key
	}
	s, err := credit.Sign(r, key, p.Cert.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return s.Encode()
}

func (cn *creditNet) publish(t *testing.T, from *agent.Agent, receipts ...[]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := creditclient.Publish(ctx, from.Endpoint(), from.DHT(), cn.clientKey(), receipts); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func (cn *creditNet) show(t *testing.T, by *agent.Agent) credit.Credit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := creditclient.Show(ctx, by.Endpoint(), by.DHT(), cn.clientKey(), cn.clock.Now())
	if err != nil {
		t.Fatalf("show: %v", err)
	}
	return c
}

// holders are the running nodes holding receipts of the client.
func (cn *creditNet) holders() []peer.ID {
	var out []peer.ID
	for _, nd := range cn.net.Live() {
		if len(nd.Credit().Receipts(cn.clientKey(), 1<<20, 100)) > 0 {
			out = append(out, nd.ID())
		}
	}
	slices.Sort(out)
	return out
}

func (cn *creditNet) closest() []peer.ID {
	out := cn.net.TrueClosest(credit.Key(cn.clientKey()), 5)
	slices.Sort(out)
	return out
}

func TestCreditTwoProjects(t *testing.T) {
	cn := startCreditNet(t, 12, 1)
	cn.publish(t, cn.projects["lhc"], cn.receipt(t, "lhc", 1, 0, 3, ""))
	cn.publish(t, cn.projects["lhc"], cn.receipt(t, "lhc", 2, 3, 2, ""))
	cn.publish(t, cn.projects["climate"], cn.receipt(t, "climate", 1, 0, 4, ""))
	if got, want := cn.holders(), cn.closest(); !slices.Equal(got, want) {
		t.Fatalf("receipts held by %v, want the client's 5 closest %v", got, want)
	}
	observer := cn.agent(t, certs.RoleProject, "observer")
	c := cn.show(t, observer)
	if c.Total != 9 || len(c.Projects) != 2 || len(c.Rejected) != 0 || len(c.Conflicts) != 0 {
		t.Fatalf("credit %+v, want 9 (lhc 5 + climate 4), nothing rejected", c)
	}
	for _, p := range c.Projects {
		if p.Sources != 5 {
			t.Errorf("%s: newest receipt from %d nodes, want 5", p.Project, p.Sources)
		}
	}
}

func TestCreditForgedPutRefused(t *testing.T) {
	cn := startCreditNet(t, 8, 2)
	target := cn.net.Live()[0]
	good := cn.receipt(t, "lhc", 1, 0, 1, "")
	forged := cn.receipt(t, "lhc", 2, 1, 100, "climate") // lhc's receipt, climate's key
	s, _, err := credit.Decode(cn.receipt(t, "lhc", 3, 1, 1, ""))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := credit.Verify(s.Encode(), target.Endpoint().Admission().Verifier(), cn.clock.Now())
	r.Total, r.Results = 1000, 1000 // altered after signing: a fresh encoding under the old signature
	altered := alter(t, s, r)
	for name, put := range map[string][][]byte{"forged": {forged}, "altered": {altered}, "good then forged": {good, forged}} {
		_, _, err := creditclient.Put(context.Background(), cn.client.Endpoint(), target.ID(), put)
		var we *wire.Error
		if !errors.As(err, &we) || we.Status != wire.StatusUnauthorized || !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("%s: put answered %v, want unauthorized: signature does not verify", name, err)
		}
	}
	if n := target.Credit().Held(); n != 0 {
		t.Fatalf("node holds %d receipts after refused puts, want 0 (a put with a forged receipt changes nothing)", n)
	}
	// Control: the good receipt alone is stored, from a client too.
	if stored, _, err := creditclient.Put(context.Background(), cn.client.Endpoint(), target.ID(), [][]byte{good}); err != nil || stored != 1 {
		t.Fatalf("good receipt: stored %d, %v", stored, err)
	}
}

// alter re-encodes r under s's signature and certificate.
func alter(t *testing.T, s *credit.Signed, r *credit.Receipt) []byte {
	t.Helper()
	p, err := credit.Sign(r, ed25519.NewKeyFromSeed(make([]byte, 32)), s.Cert)
	if err != nil {
		t.Fatal(err)
	}
	p.Sig = s.Sig
	return p.Encode()
}

// TestCreditLyingNode: one of the client's nodes answers an altered
// receipt; Show rejects it, names that node, and the sum is the honest
// nodes' receipts'.
func TestCreditLyingNode(t *testing.T) {
	cn := startCreditNet(t, 10, 3)
	good := cn.receipt(t, "lhc", 1, 0, 2, "")
	cn.publish(t, cn.projects["lhc"], good)
	liar := cn.net.Node(cn.net.Index(cn.closest()[0]))
	s, r, err := credit.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	r.Total, r.Results = 200, 200
	r.Entries[0].Amount = 199
	lie := alter(t, s, r)
	liar.Endpoint().Handle(wire.ProtoCreditGet, wire.MaxCreditGetFrame, nil, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return &wire.CreditGetResponse{Receipts: [][]byte{lie}}, nil
	})
	c := cn.show(t, cn.client)
	if c.Total != 2 || len(c.Rejected) != 1 || c.Rejected[0].From != liar.ID().String() {
		t.Fatalf("credit %+v, want 2 with the liar %s's receipt rejected", c, liar.ID())
	}
	if c.Projects[0].Sources != 4 {
		t.Errorf("newest receipt from %d nodes, want the 4 honest", c.Projects[0].Sources)
	}
}

// TestCreditRepairAndRestart: receipts survive a holder's restart, and
// when holders die a repair round puts them on the new closest, and a
// holder no longer among them hands them on.
func TestCreditRepairAndRestart(t *testing.T) {
	cn := startCreditNet(t, 10, 4)
	cn.publish(t, cn.projects["lhc"], cn.receipt(t, "lhc", 1, 0, 2, ""), cn.receipt(t, "lhc", 2, 2, 1, ""))
	first := cn.closest()
	ctx := context.Background()
	i := cn.net.Index(first[0])
	if err := cn.net.Kill(i); err != nil {
		t.Fatal(err)
	}
	if err := cn.net.Restart(ctx, i); err != nil {
		t.Fatal(err)
	}
	if n := cn.net.Node(i).Credit().Held(); n != 2 {
		t.Fatalf("restarted holder holds %d receipts, want 2", n)
	}
	for _, p := range first[1:3] {
		if err := cn.net.Kill(cn.net.Index(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := cn.holders(), cn.liveClosest(); slices.Equal(got, want) {
		t.Fatalf("control: before repair the live 5 closest %v already hold the receipts", want)
	}
	var pushes int
	for range 2 {
		for _, nd := range cn.net.Live() {
			pushes += nd.Credit().RepairRound(ctx).Pushes
		}
	}
	if got, want := cn.holders(), cn.liveClosest(); !slices.Equal(got, want) {
		t.Fatalf("after repair receipts held by %v, want the live 5 closest %v (%d pushes)", got, want, pushes)
	}
	if c := cn.show(t, cn.client); c.Total != 3 || c.Projects[0].Sources < 3 {
		t.Fatalf("after repair: %+v", c)
	}
}

func (cn *creditNet) liveClosest() []peer.ID {
	live := map[peer.ID]bool{}
	for _, nd := range cn.net.Live() {
		live[nd.ID()] = true
	}
	var out []peer.ID
	for _, p := range cn.net.TrueClosest(credit.Key(cn.clientKey()), cn.net.Len()) {
		if live[p] && len(out) < 5 {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
