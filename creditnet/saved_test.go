package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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

	// A request's reports are verified together: a forged one among them
	// is refused and stops the rest; those before it count.
	report := func(job []byte, o quota.Outcome) wire.QuotaReport {
		return wire.QuotaReport{Client: client, Job: job, Outcome: uint8(o),
			Sig: ed25519.Sign(a.Identity().Key, wire.QuotaReportMessage(client, job, uint8(o)))}
	}
	forged := report(keys[3], quota.Done)
	forged.Sig[7] ^= 1
	err = record.Credit().ApplyReports(from, []wire.QuotaReport{report(keys[2], quota.Done), forged, report(keys[0], quota.Released)})
	if err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("a forged report among good ones: %v, want refused for its signature", err)
	}
	reported := record.Credit().Account(client).Reported
	if !slices.Contains(reported, string(keys[2])) || slices.Contains(reported, string(keys[3])) {
		t.Fatalf("after a forged report: reported %d jobs, want the one before it and not the forged", len(reported))
	}
	if err := record.Credit().ApplyReports(from, []wire.QuotaReport{report(keys[3], quota.Done), report(keys[1], quota.Done)}); err != nil {
		t.Fatalf("control: good reports refused: %v", err)
	}
	if !same(record.Credit().Account(client), record.Credit().SavedAccount(client)) {
		t.Fatal("reports applied together were not saved")
	}
}
