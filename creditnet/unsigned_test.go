package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestUnsignedReportsOnlyOwn: a record node takes an unsigned report only
// as the client's own done or released report over its own connection.
// The same unsigned report passed on by a node is refused, as is the
// client's own unsigned failure (which would be forwarded); in a batch
// mixing an unsigned report, a signed one and a forged one, the first
// two are applied and the forged one refused (the mapping of the batch
// verification's answer back to the reports).
func TestUnsignedReportsOnlyOwn(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 85,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	keys := testnet.SubmitJobs(t, f.Project, 4, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	q := quotaHarness{f: f, ctx: context.Background()}
	a := q.agent(t, "reporter")
	client := a.Identity().Key.Public().(ed25519.PublicKey)
	if _, errs := q.claimer(a).ClaimMany(q.ctx, keys, f.Net.PlaceOf(keys[0]), nil); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	var record *node.Node
	for _, nd := range f.Net.Live() {
		if _, held := nd.Credit().Quota(client); held > 0 {
			record = nd
		}
	}
	if record == nil {
		t.Fatal("no record node holds the client's jobs")
	}
	held := func() int {
		_, h := record.Credit().Quota(client)
		return h
	}
	fromClient, ok := record.Endpoint().Admission().Get(a.Endpoint().ID())
	if !ok {
		t.Fatal("the client is not admitted at its record node")
	}
	var fromNode *overlay.Admitted
	for _, nd := range f.Net.Live() {
		if adm, ok := record.Endpoint().Admission().Get(nd.ID()); ok && nd != record {
			fromNode = adm
			break
		}
	}
	if fromNode == nil {
		t.Fatal("no node admitted at the record node")
	}
	unsigned := func(k []byte, o quota.Outcome) wire.QuotaReport {
		return wire.QuotaReport{Client: client, Job: k, Outcome: uint8(o)}
	}
	signed := func(k []byte, o quota.Outcome) wire.QuotaReport {
		r := unsigned(k, o)
		r.Sig = ed25519.Sign(a.Identity().Key, wire.QuotaReportMessage(client, k, uint8(o)))
		return r
	}
	unauthorized := func(err error) bool {
		st, ok := overlay.StatusOf(err)
		return ok && st == wire.StatusUnauthorized
	}
	if err := record.Credit().ApplyReports(fromNode, []wire.QuotaReport{unsigned(keys[0], quota.Done)}); !unauthorized(err) {
		t.Errorf("an unsigned report passed on by a node: %v, want unauthorized", err)
	}
	if err := record.Credit().ApplyReports(fromClient, []wire.QuotaReport{unsigned(keys[0], quota.Failed)}); !unauthorized(err) {
		t.Errorf("the client's own unsigned failure: %v, want unauthorized", err)
	}
	if h := held(); h != len(keys) {
		t.Fatalf("%d jobs held after the refused reports, want %d", h, len(keys))
	}
	forged := signed(keys[2], quota.Done)
	forged.Sig[0] ^= 1
	err := record.Credit().ApplyReports(fromClient, []wire.QuotaReport{unsigned(keys[0], quota.Done), signed(keys[1], quota.Released), forged, signed(keys[3], quota.Done)})
	if !unauthorized(err) {
		t.Errorf("a batch with a forged report: %v, want unauthorized", err)
	}
	if h := held(); h != len(keys)-2 {
		t.Errorf("%d jobs held after the batch, want %d (the two reports before the forged one applied)", h, len(keys)-2)
	}
}
