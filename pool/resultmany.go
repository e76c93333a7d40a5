package pool

import (
	"context"

	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// handleResultMany takes several of a client's results, each as
// handleResult takes one (submitResult: the client's certificate, the
// envelope's outer signature, the job claimed by this client, the claim's
// certificate when carried), and answers each: "" stored, else why not.
// The envelopes of one delivery share their outer signature (a batch
// root, result.SignOuterBatch): it is verified once here and remembered
// (p.sigs), the rest of each check costs a few hashes. One bad result is
// refused alone.
func (p *Pool) handleResultMany(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ResultManyRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return p.resultMany(from, &req), nil
}

// handleResultManyShared answers wire.ProtoResultManyShared: the request
// rebuilt as ProtoResultMany's (each certificate's acceptances byte for
// byte as their nodes signed them), each result taken as there.
func (p *Pool) handleResultManyShared(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var shared wire.ResultManySharedRequest
	if err := wire.Decode(body, &shared); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	req, err := shared.Unshared()
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return p.resultMany(from, req), nil
}

// resultMany is handleResultMany's answer to a decoded request.
func (p *Pool) resultMany(from *overlay.Admitted, req *wire.ResultManyRequest) *wire.ResultManyResponse {
	resp := &wire.ResultManyResponse{Refused: make([]string, len(req.Items))}
	for i := range req.Items {
		it := &req.Items[i]
		in := resultIn{cert: from.Identity.Cert.Raw, env: it.Envelope, at: it.At, sent: it.Sent}
		if len(it.Accepts) > 0 {
			in.from, in.start, in.accepts = from, it.Start, it.Accepts
		}
		if err := p.submitResult(in); err != nil {
			resp.Refused[i] = wire.RefusalText(err)
		}
	}
	return resp
}
