package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"
	"time"

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
// signature: an unsigned report there refuses the whole request).
func TestOwnReportsGoUnsigned(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old=%v", old), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 81,
				Configure: func(_ int, cfg *node.Config) {
					cfg.Claim.RequireTicket = true
					cfg.Credit.Quota.Initial = 4
				}})
			if old {
				for _, nd := range f.Net.Live() {
					nd.Endpoint().Handle(wire.ProtoQuotaTicketManyOwn, wire.MaxQuotaFrame, nil,
						func(context.Context, *overlay.Admitted, []byte) (any, error) {
							return nil, overlay.StatusErr(wire.StatusNotFound, errors.New("protocol not served"))
						})
				}
			}
			keys := testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
			q := &quotaNet{f: f, ctx: context.Background()}
			a := q.agent(t, "reporter")
			cl := claimer(a, time.Hour)
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
			claimAll(keys[4:])
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
	q := &quotaNet{f: f, ctx: context.Background()}
	victim, liar := q.agent(t, "victim"), q.agent(t, "liar")
	if _, errs := claimer(victim, time.Hour).ClaimMany(q.ctx, keys[:1], f.Net.PlaceOf(keys[0]), nil); errs[0] != nil {
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
