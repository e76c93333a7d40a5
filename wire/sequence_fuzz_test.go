package wire_test

import (
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// sequenceMsgs are valid sequence messages used as fuzz seeds.
func sequenceMsgs() []wire.Validator {
	return []wire.Validator{
		&wire.CheckpointPut{Checkpoint: []byte{1}},
		&wire.CheckpointAck{Steps: 20},
		&wire.CheckpointGetRequest{Key: []byte{1}},
		&wire.CheckpointGetResponse{Checkpoint: []byte{1}, Steps: 20},
		&wire.TrickleGetRequest{Keys: [][]byte{{1}, {2}}},
		&wire.TrickleGetResponse{Trickles: [][][]byte{{{1}, {2}}, nil}},
		&wire.TrickleCollect{Key: []byte{1}, UpTo: 3},
		&wire.SequenceOrder{Key: []byte{1}, Steps: 24, Rev: 1, Sig: make([]byte, 64)},
	}
}

// FuzzDecodeSequenceMessages decodes arbitrary bytes as every sequence
// message: never a panic; what decodes re-encodes and decodes the same.
func FuzzDecodeSequenceMessages(f *testing.F) {
	for _, m := range sequenceMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range sequenceMsgs() {
			checkDecode(t, proto, b)
		}
	})
}

// TestSequenceBounds: each message refuses what its bounds forbid.
func TestSequenceBounds(t *testing.T) {
	bad := []wire.Validator{
		&wire.CheckpointPut{},
		&wire.CheckpointPut{Checkpoint: make([]byte, job.MaxCheckpointSize+1)},
		&wire.CheckpointAck{Steps: job.MaxSteps + 1},
		&wire.CheckpointGetRequest{},
		&wire.CheckpointGetResponse{Steps: job.MaxSteps + 1},
		&wire.TrickleGetRequest{},
		&wire.TrickleGetRequest{Keys: make([][]byte, wire.MaxTrickleKeys+1)},
		&wire.TrickleGetResponse{Trickles: [][][]byte{make([][]byte, wire.MaxTricklesHeld+1)}},
		&wire.TrickleGetResponse{Trickles: [][][]byte{{{}}}},
		&wire.TrickleCollect{Key: []byte{1}},
		&wire.SequenceOrder{Key: []byte{1}, Rev: 1, Sig: make([]byte, 64)},
		&wire.SequenceOrder{Key: []byte{1}, Steps: 2, Sig: make([]byte, 64)},
		&wire.SequenceOrder{Key: []byte{1}, Steps: 2, Rev: 1},
	}
	for _, m := range bad {
		if m.Validate() == nil {
			t.Errorf("%#v validated", m)
		}
	}
	for _, m := range sequenceMsgs() {
		if err := m.Validate(); err != nil {
			t.Errorf("control: %#v: %v", m, err)
		}
	}
}
