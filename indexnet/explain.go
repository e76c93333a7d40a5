package indexnet

import (
	"context"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// declines are the jobs a client's query declines (served to it, not
// taken), with its reasons (parallel to jobs, or empty: not said).
type declines struct {
	client  string
	jobs    [][]byte
	reasons []wire.SkipReason
}

// declineLocked ends the quarantine of the declined entries under
// keyword and records each decline, attributed to its client with its
// reason (the client's word, never acted on). s.mu is held.
func (s *Server) declineLocked(keyword string, d declines, now int64) {
	for i, k := range d.jobs {
		why := wire.SkipUnknown
		if len(d.reasons) == len(d.jobs) {
			why = d.reasons[i]
		}
		s.table.Decline(keyword, k, d.client, uint8(why), now)
	}
}

// explainers are the roles that may ask an index node about a keyword and
// a job: a project (`up project describe`) and a node.
var explainers = []certs.Role{certs.RoleProject, certs.RoleNode}

func (s *Server) registerExplain() {
	s.ep.Handle(wire.ProtoIndexExplain, wire.MaxQueryBytes+wire.MaxJobKeyLen+64, explainers, s.handleExplain)
}

// handleExplain answers ProtoIndexExplain. It changes nothing.
func (s *Server) handleExplain(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.IndexExplainRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return s.Explain(req.Keyword, req.Job), nil
}

// Explain is what this index node knows of keyword and job (the local
// form of ProtoIndexExplain): whether it lists the job under the keyword,
// how often it served the entry and clients declined it, and how often
// clients queried the keyword. Ages are on this node's clock.
func (s *Server) Explain(keyword string, jobKey []byte) *wire.IndexExplainResponse {
	now := s.nowMS()
	resp := &wire.IndexExplainResponse{LastQueryMS: -1}
	s.mu.Lock()
	e, listed := s.table.Get(keyword, jobKey)
	n, last, queried := s.table.Queried(keyword)
	s.mu.Unlock()
	if queried {
		resp.Queries, resp.LastQueryMS = n, max(0, now-last)
	}
	if !listed || now >= e.Expires {
		return resp
	}
	resp.Listed, resp.Quarantined = true, now < e.Held
	resp.Served, resp.Declines = e.ServedN, e.Declines
	resp.Notes = explainNotes(e.Notes, now)
	return resp
}

// explainNotes are an entry's notes as an answer lists them: the latest
// wire.MaxExplainNotes, ages on this node's clock.
func explainNotes(notes []index.Note, now int64) []wire.ExplainNote {
	notes = notes[max(0, len(notes)-wire.MaxExplainNotes):]
	out := make([]wire.ExplainNote, 0, len(notes))
	for _, n := range notes {
		out = append(out, wire.ExplainNote{Client: []byte(n.Client), Reason: wire.SkipReason(n.Reason), AgeMS: max(0, now-n.At)})
	}
	return out
}
