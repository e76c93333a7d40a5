package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestAccountsSavedPerRequest: a record node writes a client's account
// once per request (its tickets and the reports the request carries),
// and what it wrote is what it holds — what a restart loads — after
// many-ticket requests and reports. Control: a report applied without
// the request's save leaves the stored account behind.
func TestAccountsSavedPerRequest(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 83,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	keys := testnet.SubmitJobs(t, f.Project, 6, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	ctx := context.Background()
	a, err := f.Net.NewAgent(ctx, certs.RoleClient, "saver")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	client := a.Identity().Key.Public().(ed25519.PublicKey)
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0)
	cl.SetSigner(a.Identity().Key)
	cl.SetTickets(time.Hour)
	claims, errs := cl.ClaimMany(ctx, keys[:4], f.Net.PlaceOf(keys[0]), nil)
	for i, err := range errs {
		if err != nil || claims[i] == nil {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	for _, k := range keys[:2] {
		if err := cl.Report(ctx, k, quota.Done); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.FlushReports(ctx); err != nil {
		t.Fatal(err)
	}
	same := func(x, y *quota.Account) bool {
		bx, _ := json.Marshal(x)
		by, _ := json.Marshal(y)
		return string(bx) == string(by)
	}
	accounts := 0
	var record *node.Node
	for _, nd := range f.Net.Live() {
		held := nd.Credit().Account(client)
		if held == nil {
			continue
		}
		accounts++
		record = nd
		if saved := nd.Credit().SavedAccount(client); !same(held, saved) {
			t.Errorf("%s: holds %+v, saved %+v", nd.Name(), held, saved)
		}
	}
	if accounts == 0 {
		t.Fatal("no record node holds the client's account")
	}
	// Control: a report the request's save does not cover.
	msg := wire.QuotaReportMessage(client, keys[2], uint8(quota.Released))
	rep := &wire.QuotaReport{Client: client, Job: keys[2], Outcome: uint8(quota.Released), Sig: ed25519.Sign(a.Identity().Key, msg)}
	from, ok := record.Endpoint().Admission().Get(a.Endpoint().ID())
	if !ok {
		t.Fatal("the client is not admitted at its record node")
	}
	if err := record.Credit().ReportUnsaved(from, rep); err != nil {
		t.Fatal(err)
	}
	if same(record.Credit().Account(client), record.Credit().SavedAccount(client)) {
		t.Fatal("control: an unsaved report's account matches the stored one")
	}
}
