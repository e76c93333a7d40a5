package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestOwnReportsGoUnsigned: a client's done reports ride on its next
// many-ticket request unsigned (wire.ProtoQuotaTicketManyOwn) and are
// applied: with a quota of 4 full, the next 4 tickets are given only
// because the 4 reports freed the room. A record node of an older
// version (one that does not serve the protocol) gets the old request
// with the reports signed, and applies them too (it checks every
// signature: an unsigned report there refuses the whole request); once
// upgraded, it is asked the new way again after the claimer's memory of
// it lapses (10 minutes on the claimer's clock). The record nodes'
// handler counts any report that comes signed on the new protocol.
func TestOwnReportsGoUnsigned(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old=%v", old), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 81,
				Configure: func(_ int, cfg *node.Config) {
					cfg.Claim.RequireTicket = true
					cfg.Credit.Quota.Initial = 4
				}})
			var signedOwn atomic.Int64 // reports that came signed on the new protocol
			var upgraded atomic.Bool   // the old nodes serve the new protocol from now on
			for _, nd := range f.Net.Live() {
				svc := nd.Credit()
				nd.Endpoint().Handle(wire.ProtoQuotaTicketManyOwn, wire.MaxQuotaFrame+wire.MaxClaimMany*(wire.MaxJobKeyLen+8), nil,
					func(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
						if old && !upgraded.Load() {
							return nil, overlay.StatusErr(wire.StatusNotFound, errors.New("protocol not served"))
						}
						var req wire.QuotaTicketManyOwnRequest
						if err := wire.Decode(body, &req); err == nil {
							for _, r := range req.Reports {
								if !r.Unsigned() {
									signedOwn.Add(1)
								}
							}
						}
						return svc.HandleTicketManyOwn(ctx, from, body)
					})
			}
			keys := testnet.SubmitJobs(t, f.Project, 12, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
			q := quotaHarness{f: f, ctx: context.Background()}
			a := q.agent(t, "reporter")
			var ahead atomic.Int64 // how far the claimer's clock is ahead, ns
			cl := q.claimerAt(a, func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) })
			place := f.Net.PlaceOf(keys[0])
			claimAll := func(ks [][]byte) {
				t.Helper()
				_, errs := cl.ClaimMany(q.ctx, ks, place, nil)
				for i, err := range errs {
					if err != nil {
						t.Fatalf("job %d: %v", i, err)
					}
				}
			}
			claimAll(keys[:4])
			for _, k := range keys[:4] {
				if err := cl.Report(q.ctx, k, quota.Done); err != nil {
					t.Fatal(err)
				}
			}
			claimAll(keys[4:8])
			held := 0
			key := a.Identity().Key.Public().(ed25519.PublicKey)
			for _, p := range f.Net.TrueClosest(credit.Key(key), 5) {
				_, h := f.Net.Node(f.Net.Index(p)).Credit().Quota(key)
				held += h
			}
			if held != 4 {
				t.Errorf("record nodes hold %d jobs of the client after 4 reported done and 4 new, want 4", held)
			}
			sent := func(proto string) int {
				return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
			}
			own, many, alone := sent(wire.ProtoQuotaTicketManyOwn), sent(wire.ProtoQuotaTicketMany), sent(wire.ProtoQuotaReport)
			want := [3]int{2, 0, 0}
			if old {
				want = [3]int{1, 2, 0} // asked once the new way, then known old
			}
			if got := [3]int{own, many, alone}; got != want {
				t.Errorf("sent %d own-report, %d old many-ticket requests and %d lone reports; want %v", own, many, alone, want)
			}
			if n := signedOwn.Load(); n != 0 {
				t.Errorf("%d reports went signed on %s, want none", n, wire.ProtoQuotaTicketManyOwn)
			}
			if !old {
				return
			}
			// The old nodes are upgraded: once the claimer's memory of
			// them lapses (oldFor, 10 minutes on its clock), it asks the
			// new way again, its reports unsigned.
			upgraded.Store(true)
			ahead.Store(int64(11 * time.Minute))
			for _, k := range keys[4:8] {
				if err := cl.Report(q.ctx, k, quota.Done); err != nil {
					t.Fatal(err)
				}
			}
			claimAll(keys[8:])
			if got, want := sent(wire.ProtoQuotaTicketManyOwn), 2; got != want || sent(wire.ProtoQuotaTicketMany) != 2 {
				t.Errorf("after the upgrade: %d own-report and %d old requests, want %d and 2", got, sent(wire.ProtoQuotaTicketMany), want)
			}
		})
	}
}

// TestOwnReportsForged: an unsigned report is taken only as the client's
// own done or released report. A client that sends, unsigned, a failure
// (which record nodes forward) is refused as malformed; one that sends
// an unsigned done report in another client's name is refused as
// unauthorized, and the other client's ticket stays held.
func TestOwnReportsForged(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 83,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	keys := testnet.SubmitJobs(t, f.Project, 2, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	q := quotaHarness{f: f, ctx: context.Background()}
	victim, liar := q.agent(t, "victim"), q.agent(t, "liar")
	if _, errs := q.claimer(victim).ClaimMany(q.ctx, keys[:1], f.Net.PlaceOf(keys[0]), nil); errs[0] != nil {
		t.Fatal(errs[0])
	}
	vkey := victim.Identity().Key.Public().(ed25519.PublicKey)
	lkey := liar.Identity().Key.Public().(ed25519.PublicKey)
	record := f.Net.TrueClosest(credit.Key(vkey), 1)[0]
	held := func() int {
		_, h := f.Net.Node(f.Net.Index(record)).Credit().Quota(vkey)
		return h
	}
	if held() != 1 {
		t.Fatalf("victim's record node holds %d of its jobs, want 1", held())
	}
	for _, c := range []struct {
		name   string
		rep    wire.QuotaReport
		status wire.Status
	}{
		{"unsigned failure", wire.QuotaReport{Client: lkey, Job: keys[1], Outcome: uint8(quota.Failed)}, wire.StatusBadRequest},
		{"another client's done", wire.QuotaReport{Client: vkey, Job: keys[0], Outcome: uint8(quota.Done)}, wire.StatusUnauthorized},
	} {
		req := &wire.QuotaTicketManyOwnRequest{Jobs: [][]byte{keys[1]}, HoldMS: time.Hour.Milliseconds(), Reports: []wire.QuotaReport{c.rep}}
		var resp wire.QuotaTicketManyResponse
		err := liar.Endpoint().Call(q.ctx, record, wire.ProtoQuotaTicketManyOwn, req, wire.MaxClaimMany*wire.MaxQuotaTicketReply, &resp)
		var we *wire.Error
		if !errors.As(err, &we) || we.Status != c.status {
			t.Errorf("%s: %v, want status %v", c.name, err, c.status)
		}
	}
	if held() != 1 {
		t.Errorf("victim's record node holds %d of its jobs after the forged reports, want 1", held())
	}
}

// quotaHarness makes clients of a fixture whose nodes require tickets.
type quotaHarness struct {
	f   *testnet.Fixture
	ctx context.Context
}

// agent is a new client agent named name, closed with the test.
func (q quotaHarness) agent(t *testing.T, name string) *agent.Agent {
	t.Helper()
	a, err := q.f.Net.NewAgent(q.ctx, certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// claimer is a claimer of a's with tickets held for an hour.
func (q quotaHarness) claimer(a *agent.Agent) *claimclient.Claimer { return q.claimerAt(a, nil) }

// claimerAt is claimer on the clock now (nil: the system's).
func (q quotaHarness) claimerAt(a *agent.Agent, now func() time.Time) *claimclient.Claimer {
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), now, 0)
	cl.SetSigner(a.Identity().Key)
	cl.SetTickets(time.Hour)
	return cl
}
