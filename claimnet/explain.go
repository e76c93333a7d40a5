package claimnet

import (
	"context"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// explainers are the roles that may ask a replica why a job does not run:
// a project (`up project describe`) and a node.
var explainers = []certs.Role{certs.RoleProject, certs.RoleNode}

// noteRelease records a release of a job this node holds, attributed to
// its client with the reason it gave, when keep says the release gave
// something back (a claim, or a temporary claim with a reason). The
// reason is the client's word: recorded for `up project describe`, never
// acted on.
func (s *Service) noteRelease(req wire.ReleaseRequest, from *overlay.Admitted, keep bool) {
	if !keep {
		return
	}
	now := s.now().UnixMilli()
	s.mu.Lock()
	s.srv.NoteRelease(string(req.Job), []byte(from.Identity.PublicKey), uint8(req.Reason), now)
	s.mu.Unlock()
}

// handleExplain answers ProtoJobExplain: what this replica holds of a job.
// It changes nothing.
func (s *Service) handleExplain(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.JobExplainRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return s.Explain(req.Job), nil
}

// Explain is what this replica holds of job key (the local form of
// ProtoJobExplain): its state, claim, results and latest releases. Ages
// are on this node's clock.
func (s *Service) Explain(key []byte) *wire.JobExplainResponse {
	h, held := s.pool.Lookup(key)
	if !held {
		return &wire.JobExplainResponse{}
	}
	now := s.now().UnixMilli()
	resp := &wire.JobExplainResponse{Held: true}
	if _, ok := s.pool.Result(key); ok {
		resp.Results = 1
	}
	s.mu.Lock()
	temp := s.srv.TempOf(string(key), now)
	accepted, acceptedOK := s.srv.AcceptedAt(string(key), h.State.Client, h.State.Start)
	n, notes := s.srv.Releases(string(key))
	s.mu.Unlock()
	switch st := h.State; {
	case st.Phase == job.Claimed:
		resp.State, resp.Claimant = "claimed", []byte(st.Client)
		since := st.Start // the client's clock, within T_skew of this one
		if acceptedOK {
			since = accepted
		}
		resp.ClaimAgeMS = max(0, now-since)
	case st.Phase == job.Finished:
		resp.State, resp.Claimant = "done", []byte(st.Client)
	case st.Phase == job.Collected:
		resp.State = "collected"
	case temp != nil:
		resp.State, resp.Claimant = "granted", temp.Client
		resp.ClaimAgeMS = max(0, now-(temp.Until-s.cfg.TClaim.Milliseconds()))
	default:
		resp.State = "open"
	}
	resp.Releases, resp.Notes = n, explainNotes(notes, now)
	return resp
}

// explainNotes are notes as an answer lists them: the latest
// wire.MaxExplainNotes, ages on this node's clock.
func explainNotes(notes []claim.Note, now int64) []wire.ExplainNote {
	notes = notes[max(0, len(notes)-wire.MaxExplainNotes):]
	out := make([]wire.ExplainNote, 0, len(notes))
	for _, n := range notes {
		out = append(out, wire.ExplainNote{Client: n.Client, Reason: wire.SkipReason(n.Reason), AgeMS: max(0, now-n.At)})
	}
	return out
}
