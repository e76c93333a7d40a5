package claimclient

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// PutCheckpoint sends a sequence step's checkpoint (job.Checkpoint,
// encoded) to the claim's nodes, which count it as the claim's renewal,
// and returns how many stored it and the step count a majority of them
// answered at least (job.MajorityAtLeast: the sequence's length as the
// replicas know it, a project's order to end or extend it included). It fails
// short of a majority of the job's r replicas: the claim would then
// lapse at the others after this step's deadline.
func (c *Claimer) PutCheckpoint(ctx context.Context, cl *Claim, ckpt []byte) (stored int, steps uint16, err error) {
	if err := cl.Certified(ctx); err != nil {
		return 0, 0, fmt.Errorf("put checkpoint: %w", err)
	}
	acks := map[string]*wire.CheckpointAck{}
	for _, n := range ids(cl.Nodes) {
		acks[n] = &wire.CheckpointAck{}
	}
	req := &wire.CheckpointPut{Checkpoint: ckpt}
	var errs []error
	var answered []uint16
	for n, err := range c.fanOutResp(ctx, ids(cl.Nodes), wire.ProtoCheckpointPut, req, 1024, func(n string) wire.Validator { return acks[n] }) {
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", peer.ID(n), err))
			continue
		}
		stored++
		answered = append(answered, acks[n].Steps)
	}
	steps = job.MajorityAtLeast(answered)
	if need := majority(c.d.Replication()); stored < need {
		return stored, steps, fmt.Errorf("checkpoint stored on %d of %d nodes, want %d: %v", stored, len(cl.Nodes), need, errs)
	}
	return stored, steps, nil
}

// Checkpoints asks the claim's nodes for the job's newest checkpoint and
// returns each one that decodes and is of this job, with the step count
// each node answered: unverified beyond the signature's form (the caller
// verifies the signature and the client's certificate, and takes the
// newest that passes).
func (c *Claimer) Checkpoints(ctx context.Context, cl *Claim) ([]*job.Checkpoint, []uint16) {
	resps := map[string]*wire.CheckpointGetResponse{}
	for _, n := range ids(cl.Nodes) {
		resps[n] = &wire.CheckpointGetResponse{}
	}
	req := &wire.CheckpointGetRequest{Key: cl.Job}
	var out []*job.Checkpoint
	var steps []uint16
	for n, err := range c.fanOutResp(ctx, ids(cl.Nodes), wire.ProtoCheckpointGet, req, wire.MaxCheckpointFrame, func(n string) wire.Validator { return resps[n] }) {
		if err != nil {
			continue
		}
		steps = append(steps, resps[n].Steps)
		if len(resps[n].Checkpoint) == 0 {
			continue
		}
		if ck, err := job.DecodeCheckpoint(resps[n].Checkpoint); err == nil && string(ck.Job) == string(cl.Job) {
			out = append(out, ck)
		}
	}
	return out, steps
}
