package project_test

import (
	"context"
	"crypto/ed25519"
	"strconv"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditclient"
	"github.com/up-pool/up/project"
)

// TestHarvestPublishesCredit: a harvest signs one receipt per client for
// its new valid results and publishes it on the client's credit nodes,
// where anyone sums it; a harvest with nothing new signs none; a receipt
// the ledger lost track of publishing (a crash after the nodes took it)
// is published again and counted once.
func TestHarvestPublishesCredit(t *testing.T) {
	f := startFlow(t, 8, 91)
	ctx := context.Background()
	w := f.worker(t, "vol")
	var key ed25519.PublicKey
	observer, err := f.net.NewAgent(ctx, certs.RoleClient, "observer")
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	show := func() credit.Credit {
		t.Helper()
		c, _, err := creditclient.Show(ctx, observer.Endpoint(), observer.DHT(), key, f.clock.Now())
		if err != nil {
			t.Fatalf("show: %v", err)
		}
		return c
	}
	submit := func(from, to int) {
		t.Helper()
		file := "app: hashchain\nargs: [\"100\", \"{i}\"]\nkeywords: [lhc]\nsweep:\n  i: {from: " + itoa(from) + ", to: " + itoa(to) + "}\n"
		if _, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), "c"+itoa(from)+".yaml", nil); err != nil {
			t.Fatal(err)
		}
	}
	harvest := func() project.HarvestReport {
		t.Helper()
		f.net.FlushAll(ctx)
		rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{CreditEvery: -1}, nil)
		if err != nil || len(rep.Errors) > 0 {
			t.Fatalf("harvest: %+v %v", rep, err)
		}
		return rep
	}
	submit(1, 6)
	if n := f.work(t, w); n != 6 {
		t.Fatalf("worker ran %d jobs, want 6", n)
	}
	if rep := harvest(); rep.Credit.Issued != 1 || rep.Credit.Published != 1 {
		t.Fatalf("first harvest credit %+v, want 1 receipt signed and published", rep.Credit)
	}
	if err := f.ledger.DB().QueryRow(`SELECT client_key FROM results LIMIT 1`).Scan((*[]byte)(&key)); err != nil {
		t.Fatal(err)
	}
	if c := show(); c.Total != 6 || len(c.Projects) != 1 || c.Projects[0].Seq != 1 {
		t.Fatalf("credit %+v, want 6 from receipt 1 of lhc", c)
	}
	if rep := harvest(); rep.Credit != (project.Credited{}) {
		t.Fatalf("a harvest with nothing new: credit %+v, want none", rep.Credit)
	}
	submit(7, 9)
	f.clock.Advance(time.Second)
	if n := f.work(t, w); n != 3 {
		t.Fatalf("worker ran %d jobs, want 3", n)
	}
	if rep := harvest(); rep.Credit.Issued != 1 || rep.Credit.Published != 1 {
		t.Fatalf("second harvest credit %+v", rep.Credit)
	}
	if _, err := f.ledger.DB().Exec(`UPDATE credit_receipts SET published = NULL WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	if rep := harvest(); rep.Credit.Issued != 0 || rep.Credit.Published != 1 {
		t.Fatalf("harvest after the lost mark: credit %+v, want receipt 2 published again", rep.Credit)
	}
	c := show()
	if c.Total != 9 || c.Projects[0].Seq != 2 || c.Projects[0].Receipts != 2 || len(c.Conflicts) != 0 {
		t.Fatalf("credit %+v, want 9 from receipt 2 (checked against receipt 1), counted once", c)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE valid = 1 AND receipt IS NULL`); n != 0 {
		t.Errorf("%d valid results no receipt credits", n)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestHarvestIssuesEarlyCredit: between two issues on the credit's
// schedule, a harvest signs and publishes the receipt of a client owed
// CreditAfter valid results or more, and only that client's; a client
// owed fewer waits for the schedule. Control: CreditAfter negative signs
// none early.
func TestHarvestIssuesEarlyCredit(t *testing.T) {
	f := startFlow(t, 8, 92)
	ctx := context.Background()
	busy, slow := f.worker(t, "busy"), f.worker(t, "slow")
	harvest := func(after int) project.HarvestReport {
		t.Helper()
		f.net.FlushAll(ctx)
		rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{CreditAfter: after}, nil)
		if err != nil || len(rep.Errors) > 0 {
			t.Fatalf("harvest: %+v %v", rep, err)
		}
		return rep
	}
	submit := func(from, to int) {
		t.Helper()
		file := "app: hashchain\nargs: [\"100\", \"{i}\"]\nkeywords: [lhc]\nsweep:\n  i: {from: " + itoa(from) + ", to: " + itoa(to) + "}\n"
		if _, err := f.proj.SubmitFile(ctx, f.ledger, []byte(file), "e"+itoa(from)+".yaml", nil); err != nil {
			t.Fatal(err)
		}
	}
	uncredited := func(name string) int {
		t.Helper()
		return f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE valid = 1 AND receipt IS NULL AND client = '`+name+`'`)
	}
	harvest(4) // the first harvest of a Project issues on schedule: none yet
	submit(1, 5)
	if n := f.work(t, busy); n != 5 {
		t.Fatalf("busy ran %d jobs, want 5", n)
	}
	f.clock.Advance(time.Second)
	if rep := harvest(-1); rep.Credit != (project.Credited{}) || rep.Recorded != 5 {
		t.Fatalf("CreditAfter -1: recorded %d, credit %+v, want 5 recorded and none issued early", rep.Recorded, rep.Credit)
	}
	submit(6, 7)
	if n := f.work(t, busy); n != 2 {
		t.Fatalf("busy ran %d jobs, want 2", n)
	}
	submit(8, 9)
	if n := f.work(t, slow); n != 2 {
		t.Fatalf("slow ran %d jobs, want 2", n)
	}
	if rep := harvest(4); rep.Credit != (project.Credited{Issued: 1, Published: 1, Clients: 1}) {
		t.Fatalf("early credit %+v, want busy's receipt alone (7 results)", rep.Credit)
	}
	if b, s := uncredited("busy"), uncredited("slow"); b != 0 || s != 2 {
		t.Fatalf("uncredited: busy %d, slow %d; want 0 and 2", b, s)
	}
	if rep := harvest(4); rep.Credit != (project.Credited{}) {
		t.Fatalf("a harvest with nothing new: credit %+v", rep.Credit)
	}
	f.clock.Advance(project.DefaultCreditEvery)
	if rep := harvest(4); rep.Credit.Issued != 1 || rep.Credit.Clients != 1 || uncredited("slow") != 0 {
		t.Fatalf("on schedule: credit %+v, slow's uncredited %d; want slow's receipt", rep.Credit, uncredited("slow"))
	}
}
