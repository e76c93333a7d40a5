package wire

import "fmt"

// ProtoResultMany submits several of a client's sealed results at once,
// the results of one place's jobs (they share their nodes): one request
// per node, each result taken or refused as if sent alone (ProtoResult).
// Their envelopes usually share one outer signature over their batch's
// root (result.SignOuterBatch), which the node verifies once.
const ProtoResultMany = "/up/job/result/many/1.0.0"

// MaxResultManyBytes bounds the envelopes of one many-result request,
// all together: a client sends larger results alone.
const MaxResultManyBytes = 1 << 20

// ResultManyRequest carries 1 to MaxClaimMany results (ResultSubmit) of
// distinct jobs, their envelopes MaxResultManyBytes at most in all.
type ResultManyRequest struct {
	_     struct{} `cbor:",toarray"`
	Items []ResultSubmit
}

// Validate bounds a decoded ResultManyRequest. Job keys are inside the
// envelopes: a job's result named twice is answered twice, the second as
// a result sent again.
func (r *ResultManyRequest) Validate() error {
	if len(r.Items) == 0 || len(r.Items) > MaxClaimMany {
		return fmt.Errorf("results of %d jobs: %w", len(r.Items), ErrMalformed)
	}
	total := 0
	for i := range r.Items {
		if err := r.Items[i].Validate(); err != nil {
			return err
		}
		total += len(r.Items[i].Envelope)
	}
	if total > MaxResultManyBytes {
		return fmt.Errorf("results of %d bytes in all, at most %d: %w", total, MaxResultManyBytes, ErrMalformed)
	}
	return nil
}

// ResultManyResponse answers each result of the request, in its order:
// "" where the node stored it (or had it), else why it refused it.
type ResultManyResponse struct {
	_       struct{} `cbor:",toarray"`
	Refused []string
}

// Validate bounds a decoded ResultManyResponse.
func (r *ResultManyResponse) Validate() error {
	if len(r.Refused) == 0 || len(r.Refused) > MaxClaimMany {
		return fmt.Errorf("result response with %d answers: %w", len(r.Refused), ErrMalformed)
	}
	for _, why := range r.Refused {
		if len(why) > MaxRefusalLen {
			return fmt.Errorf("result refusal of %d bytes: %w", len(why), ErrMalformed)
		}
	}
	return nil
}
