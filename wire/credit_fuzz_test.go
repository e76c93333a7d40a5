package wire_test

import (
	"testing"

	"github.com/up-pool/up/wire"
)

// creditMsgs are valid credit-protocol messages used as fuzz seeds.
func creditMsgs() []wire.Validator {
	return []wire.Validator{
		&wire.CreditPut{Receipts: [][]byte{{1, 2}, {3}}},
		&wire.CreditPutResponse{Stored: 2, Had: 1},
		&wire.CreditGet{Client: make([]byte, 32)},
		&wire.CreditGetResponse{Receipts: [][]byte{{1}}},
		&wire.QuotaTicketRequest{Job: []byte{1, 2}, HoldMS: 3600_000},
		&wire.QuotaTicketRequest{Job: []byte{1, 2}, HoldMS: 1, Reports: []wire.QuotaReport{{Client: make([]byte, 32), Job: []byte{1}, Outcome: 1, Sig: make([]byte, 64)}}},
		&wire.QuotaTicketResponse{Ticket: []byte{1}},
		&wire.QuotaReport{Client: make([]byte, 32), Job: []byte{1}, Outcome: 3, Sig: make([]byte, 64)},
		&wire.ClaimRequest{Job: []byte{1}, Ticket: []byte{2}},
		&wire.QuotaTicketManyRequest{Jobs: [][]byte{{1}, {2}}, HoldMS: 5, Place: []byte{3}},
		&wire.QuotaTicketManyResponse{Tickets: [][]byte{{1}, nil}},
		&wire.QuotaTicketManyOwnRequest{Jobs: [][]byte{{1}}, HoldMS: 5, Reports: []wire.QuotaReport{{Client: make([]byte, 32), Job: []byte{1}, Outcome: 2}}},
		&wire.QuotaReportManyOwnRequest{Reports: []wire.QuotaReport{{Client: make([]byte, 32), Job: []byte{1}, Outcome: 1}, {Client: make([]byte, 32), Job: []byte{2}, Outcome: 3, Sig: make([]byte, 64)}}},
	}
}

func fuzzCreditDecoder(f *testing.F, proto wire.Validator) {
	for _, m := range creditMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, proto, b) })
}

func FuzzDecodeCreditPut(f *testing.F)          { fuzzCreditDecoder(f, &wire.CreditPut{}) }
func FuzzDecodeCreditPutResponse(f *testing.F)  { fuzzCreditDecoder(f, &wire.CreditPutResponse{}) }
func FuzzDecodeCreditGet(f *testing.F)          { fuzzCreditDecoder(f, &wire.CreditGet{}) }
func FuzzDecodeCreditGetResponse(f *testing.F)  { fuzzCreditDecoder(f, &wire.CreditGetResponse{}) }
func FuzzDecodeQuotaTicketRequest(f *testing.F) { fuzzCreditDecoder(f, &wire.QuotaTicketRequest{}) }
func FuzzDecodeQuotaTicketResponse(f *testing.F) {
	fuzzCreditDecoder(f, &wire.QuotaTicketResponse{})
}
func FuzzDecodeQuotaReport(f *testing.F) { fuzzCreditDecoder(f, &wire.QuotaReport{}) }
func FuzzDecodeQuotaTicketManyRequest(f *testing.F) {
	fuzzCreditDecoder(f, &wire.QuotaTicketManyRequest{})
}
func FuzzDecodeQuotaTicketManyOwnRequest(f *testing.F) {
	fuzzCreditDecoder(f, &wire.QuotaTicketManyOwnRequest{})
}
func FuzzDecodeQuotaReportManyOwnRequest(f *testing.F) {
	fuzzCreditDecoder(f, &wire.QuotaReportManyOwnRequest{})
}
func FuzzDecodeQuotaTicketManyResponse(f *testing.F) {
	fuzzCreditDecoder(f, &wire.QuotaTicketManyResponse{})
}

// ownReq is a ProtoQuotaTicketManyOwn request carrying one report of
// outcome signed with sig (nil: unsigned).
func ownReq(outcome uint8, sig []byte) *wire.QuotaTicketManyOwnRequest {
	return &wire.QuotaTicketManyOwnRequest{Jobs: [][]byte{{1}}, HoldMS: 5,
		Reports: []wire.QuotaReport{{Client: make([]byte, 32), Job: []byte{2}, Outcome: outcome, Sig: sig}}}
}

// reportsReq is a ProtoQuotaReportManyOwn request carrying n reports of
// outcome signed with sig (nil: unsigned).
func reportsReq(n int, outcome uint8, sig []byte) *wire.QuotaReportManyOwnRequest {
	r := &wire.QuotaReportManyOwnRequest{}
	for i := range n {
		r.Reports = append(r.Reports, wire.QuotaReport{Client: make([]byte, 32), Job: []byte{byte(i), 1}, Outcome: outcome, Sig: sig})
	}
	return r
}

// TestQuotaTicketManyBounds: a many-ticket request names 1 to
// MaxClaimMany distinct jobs with a positive hold; its answer gives the
// first ticket at least.
func TestQuotaTicketManyBounds(t *testing.T) {
	jobs := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = []byte{byte(i), byte(i >> 8), 1}
		}
		return out
	}
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"most jobs", &wire.QuotaTicketManyRequest{Jobs: jobs(wire.MaxClaimMany), HoldMS: 1}, true},
		{"too many jobs", &wire.QuotaTicketManyRequest{Jobs: jobs(wire.MaxClaimMany + 1), HoldMS: 1}, false},
		{"no job", &wire.QuotaTicketManyRequest{HoldMS: 1}, false},
		{"a job twice", &wire.QuotaTicketManyRequest{Jobs: [][]byte{{1}, {1}}, HoldMS: 1}, false},
		{"no hold", &wire.QuotaTicketManyRequest{Jobs: jobs(2)}, false},
		{"answer without the first ticket", &wire.QuotaTicketManyResponse{Tickets: [][]byte{nil, {1}}}, false},
		{"answer with no ticket", &wire.QuotaTicketManyResponse{}, false},
		{"answer ticket too large", &wire.QuotaTicketManyResponse{Tickets: [][]byte{make([]byte, wire.MaxReplyBytes+1)}}, false},
	} {
		if err := c.msg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestCreditMessageBounds: every credit message takes what is at its
// bounds and refuses what is over them (or missing).
func TestCreditMessageBounds(t *testing.T) {
	n := func(k, size int) [][]byte {
		out := make([][]byte, k)
		for i := range out {
			out[i] = make([]byte, size)
		}
		return out
	}
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"put at bounds", &wire.CreditPut{Receipts: n(wire.MaxCreditPerPut, wire.MaxCreditReceipt)}, true},
		{"put of none", &wire.CreditPut{}, false},
		{"put of too many", &wire.CreditPut{Receipts: n(wire.MaxCreditPerPut+1, 1)}, false},
		{"put receipt over", &wire.CreditPut{Receipts: n(1, wire.MaxCreditReceipt+1)}, false},
		{"put receipt empty", &wire.CreditPut{Receipts: n(1, 0)}, false},
		{"put response counts over", &wire.CreditPutResponse{Stored: wire.MaxCreditPerPut, Had: 1}, false},
		{"get", &wire.CreditGet{Client: make([]byte, 32)}, true},
		{"get short key", &wire.CreditGet{Client: make([]byte, 31)}, false},
		{"get reply at count", &wire.CreditGetResponse{Receipts: n(wire.MaxCreditGetCount, 1)}, true},
		{"get reply over count", &wire.CreditGetResponse{Receipts: n(wire.MaxCreditGetCount+1, 1)}, false},
		{"ticket request", &wire.QuotaTicketRequest{Job: []byte{1}, HoldMS: 1}, true},
		{"ticket request without hold", &wire.QuotaTicketRequest{Job: []byte{1}}, false},
		{"ticket request with a bad report", &wire.QuotaTicketRequest{Job: []byte{1}, HoldMS: 1, Reports: []wire.QuotaReport{{Job: []byte{1}}}}, false},
		{"ticket over", &wire.QuotaTicketResponse{Ticket: make([]byte, wire.MaxReplyBytes+1)}, false},
		{"report", &wire.QuotaReport{Client: make([]byte, 32), Job: []byte{1}, Outcome: 1, Sig: make([]byte, 64)}, true},
		{"report outcome 4", &wire.QuotaReport{Client: make([]byte, 32), Job: []byte{1}, Outcome: 4, Sig: make([]byte, 64)}, false},
		{"report unsigned", &wire.QuotaReport{Client: make([]byte, 32), Job: []byte{1}, Outcome: 1}, false},
		// ProtoQuotaTicketManyOwn: a done or released report may go
		// unsigned, a failure may not; the old request takes none.
		{"own request, unsigned done report", ownReq(1, nil), true},
		{"own request, unsigned released report", ownReq(2, nil), true},
		{"own request, signed done report", ownReq(1, make([]byte, 64)), true},
		{"own request, unsigned failure", ownReq(3, nil), false},
		{"own request, short signature", ownReq(1, make([]byte, 63)), false},
		{"own request, outcome 0 unsigned", ownReq(0, nil), false},
		{"old request, unsigned done report", (*wire.QuotaTicketManyRequest)(ownReq(1, nil)), false},
		// ProtoQuotaReportManyOwn: the same rule, 1 to MaxQuotaReports.
		{"report-many, unsigned done and released", reportsReq(32, 1, nil), true},
		{"report-many, signed failure", reportsReq(1, 3, make([]byte, 64)), true},
		{"report-many, unsigned failure", reportsReq(1, 3, nil), false},
		{"report-many, none", reportsReq(0, 1, nil), false},
		{"report-many, too many", reportsReq(wire.MaxQuotaReports+1, 1, nil), false},
		{"claim ticket over", &wire.ClaimRequest{Job: []byte{1}, Ticket: make([]byte, wire.MaxReplyBytes+1)}, false},
	} {
		if err := c.msg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if wire.MaxCreditPutFrame > 1<<20 {
		t.Errorf("credit put frame bound %d over 1 MiB", wire.MaxCreditPutFrame)
	}
}
