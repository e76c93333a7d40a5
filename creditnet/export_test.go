package creditnet

import (
	"context"

	"github.com/up-pool/up/overlay"
)

// HandleTicketMany is the many-ticket handler, for tests that wrap it.
func (s *Service) HandleTicketMany(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	return s.handleTicketMany(ctx, from, body)
}
