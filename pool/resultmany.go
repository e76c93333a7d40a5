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
	return resp, nil
}
