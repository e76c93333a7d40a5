package indexnet

import (
	"context"
	"fmt"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// handleQuerySkip answers ProtoIndexQuerySkip: a worker's query naming the
// jobs it will not take. It counts against the client's query limit like
// any query.
func (s *Server) handleQuerySkip(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	if from.Role() == certs.RoleClient && !s.limiter.Allow(string(from.Identity.PublicKey)) {
		return nil, overlay.StatusErr(wire.StatusRateLimited, fmt.Errorf("queries from client %q over %.0f/s", from.Identity.Name, s.cfg.QueryLimit))
	}
	var req wire.IndexQuerySkipRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp, err := s.querySkipping(string(from.Identity.PublicKey), &req)
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return resp, nil
}

// QuerySkipping answers a worker's query that names the jobs it will not
// take (the local form of ProtoIndexQuerySkip): the declined entries'
// quarantine ends, and no skipped or declined job is served. Its
// declines are recorded as this node's own.
func (s *Server) QuerySkipping(req *wire.IndexQuerySkipRequest) (*wire.IndexQueryResponse, error) {
	return s.querySkipping(string(s.ep.ID()), req)
}

// querySkipping is QuerySkipping for a query of client (its public key:
// declines are recorded attributed to it).
func (s *Server) querySkipping(client string, req *wire.IndexQuerySkipRequest) (*wire.IndexQueryResponse, error) {
	if req.Query.Page {
		return nil, fmt.Errorf("query %q: a skipping query cannot page", req.Query.Query)
	}
	d := declines{client: client, jobs: req.Decline, reasons: req.Reasons}
	return s.query(&req.Query, append(req.Skip[:len(req.Skip):len(req.Skip)], req.Decline...), d)
}

// skipper reports the jobs of keys; nil when there are none.
func skipper(keys [][]byte) func([]byte) bool {
	if len(keys) == 0 {
		return nil
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[string(k)] = true
	}
	return func(j []byte) bool { return set[string(j)] }
}
