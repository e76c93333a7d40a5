package wire

import "fmt"

// ProtoQuotaReportManyOwn tells a record node how several jobs the client
// held ended, in one request (QuotaReportManyOwnRequest): the reports the
// client queued for that node which no ticket request carried within its
// flush delay. Done and released reports go unsigned, as on
// ProtoQuotaTicketManyOwn (the client's own authenticated connection
// vouches for them; a record node forwards none of them); a failure is
// signed. A client asks a node that does not serve it the old way, one
// signed ProtoQuotaReport per job.
const ProtoQuotaReportManyOwn = "/up/quota/report/many/1.0.0"

// QuotaReportManyOwnRequest carries 1 to MaxQuotaReports reports of the
// sending client's own jobs, applied in order.
type QuotaReportManyOwnRequest struct {
	_       struct{} `cbor:",toarray"`
	Reports []QuotaReport
}

// Validate bounds a decoded QuotaReportManyOwnRequest: 1 to
// MaxQuotaReports reports, done and released ones signed or not,
// failures signed.
func (r *QuotaReportManyOwnRequest) Validate() error {
	if len(r.Reports) == 0 {
		return fmt.Errorf("report request with no report: %w", ErrMalformed)
	}
	return validReports(r.Reports, true)
}
