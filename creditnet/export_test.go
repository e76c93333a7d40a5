package creditnet

import (
	"context"

	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// HandleTicketMany is the many-ticket handler, for tests that wrap it.
func (s *Service) HandleTicketMany(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	return s.handleTicketMany(ctx, from, body)
}

// HandleTicketManyOwn is the many-ticket handler of
// wire.ProtoQuotaTicketManyOwn, for tests that wrap it.
func (s *Service) HandleTicketManyOwn(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	return s.handleTicketManyOwn(ctx, from, body)
}

// HandleReportMany is the handler of wire.ProtoQuotaReportManyOwn, for
// tests that wrap it.
func (s *Service) HandleReportMany(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	return s.handleReportMany(ctx, from, body)
}

// SavedAccount is client's account as the store holds it (what a
// restarted node loads), nil when none.
func (s *Service) SavedAccount(client []byte) *quota.Account {
	b, err := s.st.Get(store.Key(quotaNS, client))
	if err != nil {
		return nil
	}
	a, err := decodeAccount(b)
	if err != nil {
		return nil
	}
	return a
}

// ReportUnsaved applies a report as a request would, without saving the
// account when it is answered: the control of the saved-account tests.
func (s *Service) ReportUnsaved(from *overlay.Admitted, req *wire.QuotaReport) error {
	var u unsaved
	return s.applyReport(from, req, false, &u)
}

// ApplyReports applies reports as a ticket request's, saving the account.
func (s *Service) ApplyReports(from *overlay.Admitted, reports []wire.QuotaReport) error {
	var u unsaved
	defer s.save(&u)
	return s.applyReports(from, reports, &u)
}

// AuditsDone is how many reported ends this node has audited.
func (s *Service) AuditsDone() int {
	return int(overlay.SumCounter(s.mAudits, "finding", "done"))
}
