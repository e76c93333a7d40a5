package creditnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditnet"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestFlushedReportsGoTogether: the done reports a client queued for a
// record node and no ticket request carried go in one request per node
// when flushed (wire.ProtoQuotaReportManyOwn), unsigned, and are applied
// there: the record nodes hold none of its jobs after, and a restarted
// node would load the account so (saved). A record node of an older
// version (one that does not serve the protocol) gets each report on its
// own, signed, and applies them too — the control that the count of
// requests is what the protocol changed.
func TestFlushedReportsGoTogether(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old=%v", old), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 87,
				Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
			var signedMany atomic.Int64 // reports that came signed on the new protocol
			for _, nd := range f.Net.Live() {
				svc := nd.Credit()
				nd.Endpoint().Handle(wire.ProtoQuotaReportManyOwn, wire.MaxQuotaFrame, nil,
					func(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
						if old {
							return nil, overlay.StatusErr(wire.StatusNotFound, errors.New("protocol not served"))
						}
						var req wire.QuotaReportManyOwnRequest
						if err := wire.Decode(body, &req); err == nil {
							for _, r := range req.Reports {
								if !r.Unsigned() {
									signedMany.Add(1)
								}
							}
						}
						return svc.HandleReportMany(ctx, from, body)
					})
			}
			const jobs = 6
			keys := testnet.SubmitJobs(t, f.Project, jobs, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
			q := quotaHarness{f: f, ctx: context.Background()}
			a := q.agent(t, "flusher")
			cl := q.claimer(a)
			if _, errs := cl.ClaimMany(q.ctx, keys, f.Net.PlaceOf(keys[0]), nil); errors.Join(errs...) != nil {
				t.Fatal(errors.Join(errs...))
			}
			key := a.Identity().Key.Public().(ed25519.PublicKey)
			held := func() (n, saved int) {
				for _, p := range f.Net.TrueClosest(credit.Key(key), 5) {
					svc := f.Net.Node(f.Net.Index(p)).Credit()
					_, h := svc.Quota(key)
					n += h
					if acc := svc.SavedAccount(key); acc != nil {
						saved += len(acc.Held)
					}
				}
				return n, saved
			}
			if n, _ := held(); n != jobs {
				t.Fatalf("record nodes hold %d jobs of the client, want %d", n, jobs)
			}
			for _, k := range keys {
				if err := cl.Report(q.ctx, k, quota.Done); err != nil {
					t.Fatal(err)
				}
			}
			if err := cl.FlushReports(q.ctx); err != nil {
				t.Fatal(err)
			}
			if n, saved := held(); n != 0 || saved != 0 {
				t.Errorf("record nodes hold %d jobs of the client after all were reported done (saved: %d), want 0", n, saved)
			}
			sent := func(proto string) int {
				return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
			}
			many, alone := sent(wire.ProtoQuotaReportManyOwn), sent(wire.ProtoQuotaReport)
			switch {
			case !old && (many < 1 || many > 2 || alone != 0):
				t.Errorf("flush sent %d many-report and %d lone reports, want 1 or 2 (one per record node that gave tickets) and 0", many, alone)
			case old && alone != jobs:
				t.Errorf("flush to older nodes sent %d lone reports, want %d", alone, jobs)
			}
			if n := signedMany.Load(); n != 0 {
				t.Errorf("%d reports went signed on %s, want none", n, wire.ProtoQuotaReportManyOwn)
			}
		})
	}
}

// TestReportManyForged: on wire.ProtoQuotaReportManyOwn, an unsigned
// report is taken only as the sender's own done or released report: an
// unsigned failure is refused as malformed, an unsigned done report in
// another client's name as unauthorized, and the other client's job stays
// held; the control, the victim's own unsigned report, frees it.
func TestReportManyForged(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 89,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	keys := testnet.SubmitJobs(t, f.Project, 2, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	q := quotaHarness{f: f, ctx: context.Background()}
	victim, liar := q.agent(t, "victim"), q.agent(t, "liar")
	if _, errs := q.claimer(victim).ClaimMany(q.ctx, keys[:1], f.Net.PlaceOf(keys[0]), nil); errs[0] != nil {
		t.Fatal(errs[0])
	}
	vkey := victim.Identity().Key.Public().(ed25519.PublicKey)
	lkey := liar.Identity().Key.Public().(ed25519.PublicKey)
	var record *node.Node
	for _, nd := range f.Net.Live() {
		if _, h := nd.Credit().Quota(vkey); h > 0 {
			record = nd
		}
	}
	if record == nil {
		t.Fatal("no record node holds the victim's job")
	}
	held := func() int {
		_, h := record.Credit().Quota(vkey)
		return h
	}
	for _, c := range []struct {
		name   string
		rep    wire.QuotaReport
		status wire.Status
	}{
		{"unsigned failure", wire.QuotaReport{Client: lkey, Job: keys[1], Outcome: uint8(quota.Failed)}, wire.StatusBadRequest},
		{"another client's done", wire.QuotaReport{Client: vkey, Job: keys[0], Outcome: uint8(quota.Done)}, wire.StatusUnauthorized},
	} {
		req := &wire.QuotaReportManyOwnRequest{Reports: []wire.QuotaReport{c.rep}}
		var resp wire.Ping
		err := liar.Endpoint().Call(q.ctx, record.ID(), wire.ProtoQuotaReportManyOwn, req, 64, &resp)
		var we *wire.Error
		if !errors.As(err, &we) || we.Status != c.status {
			t.Errorf("%s: %v, want status %v", c.name, err, c.status)
		}
	}
	if held() != 1 {
		t.Fatalf("victim's record node holds %d of its jobs after the forged reports, want 1", held())
	}
	req := &wire.QuotaReportManyOwnRequest{Reports: []wire.QuotaReport{{Client: vkey, Job: keys[0], Outcome: uint8(quota.Done)}}}
	if err := victim.Endpoint().Call(q.ctx, record.ID(), wire.ProtoQuotaReportManyOwn, req, 64, &wire.Ping{}); err != nil {
		t.Fatal(err)
	}
	if held() != 0 {
		t.Errorf("victim's record node holds %d of its jobs after the victim's own report, want 0", held())
	}
}

// TestAuditsGoTogether: with every reported end audited, the reports of
// one flush, of one place, are audited together: each node asked is
// asked once, for all of them, and every report is audited. Control:
// the jobs' nodes are asked for each job alone when the reports come in
// requests of their own (one report each), as a flush of older clients'.
func TestAuditsGoTogether(t *testing.T) {
	for _, alone := range []bool{false, true} {
		t.Run(fmt.Sprintf("alone=%v", alone), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 91, Credit: creditnet.Config{AuditEvery: 1},
				Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
			const jobs = 6
			keys := testnet.SubmitJobs(t, f.Project, jobs, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
			q := quotaHarness{f: f, ctx: context.Background()}
			a := q.agent(t, "audited")
			cl := q.claimer(a)
			claims, errs := cl.ClaimMany(q.ctx, keys, f.Net.PlaceOf(keys[0]), nil)
			if errors.Join(errs...) != nil {
				t.Fatal(errors.Join(errs...))
			}
			// The jobs end: released at their nodes, so an audit finds
			// each held and not claimed by the client.
			for i, k := range keys {
				cl.Release(q.ctx, claims[i], wire.SkipUnknown)
				if err := cl.Report(q.ctx, k, quota.Released); err != nil {
					t.Fatal(err)
				}
				if alone {
					if err := cl.FlushReports(q.ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := cl.FlushReports(q.ctx); err != nil {
				t.Fatal(err)
			}
			audited := func() int {
				n := 0
				for _, nd := range f.Net.Live() {
					n += nd.Credit().AuditsDone()
				}
				return n
			}
			await(t, "every report audited", func() bool { return audited() == jobs })
			gets := 0
			for _, nd := range f.Net.Live() {
				gets += int(overlay.SumCounter(nd.Endpoint().Metrics().RPCSent, "protocol", wire.ProtoJobGet))
			}
			t.Logf("%d reports audited with %d job gets", audited(), gets)
			if !alone && gets > 5 {
				t.Errorf("the audits of one flush asked %d job gets, want at most r = 5 (each node once)", gets)
			}
			if alone && gets < 3*jobs {
				t.Errorf("control: audits of reports sent one by one asked %d job gets, want at least %d (three per job)", gets, 3*jobs)
			}
		})
	}
}

// await waits, a minute at most, for cond.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
