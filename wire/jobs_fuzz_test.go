package wire_test

import (
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// jobMsgs are valid job-protocol messages used as fuzz seeds.
func jobMsgs() []wire.Validator {
	key := make([]byte, 36)
	claimed := job.State{Phase: job.Claimed, Client: []byte("c"), Start: 1, Deadline: 2}
	return []wire.Validator{
		&wire.StoreRequest{Jobs: []wire.JobEnvelope{{Signed: []byte{0x82, 0x40, 0x40}}}, Certs: [][]byte{{1, 2, 3}}, Replicate: true},
		&wire.StoreResponse{Results: []wire.StoreResult{{Status: wire.StatusOK, Acks: 5}, {Status: wire.StatusBadRequest, Msg: "no"}}},
		&wire.StoreResponse{Results: []wire.StoreResult{{Status: wire.StatusOK}}, Receipts: []wire.StoreReceipt{{Cert: []byte{1}, Jobs: []uint16{0}, Sig: make([]byte, 64)}}},
		&wire.GetRequest{Keys: [][]byte{key}},
		&wire.GetResponse{Jobs: []wire.JobEnvelope{{Signed: []byte{1}, State: claimed}}, Missing: [][]byte{key}},
		&wire.SyncRequest{Items: []wire.SyncItem{{Key: key, State: claimed}, {Key: key}}},
		&wire.SyncResponse{Need: [][]byte{key}, Newer: []wire.SyncItem{{Key: key, State: job.State{Phase: job.Collected, At: 9}}}},
		// States with their proofs (job.Proof, encoded).
		&wire.SyncRequest{Items: []wire.SyncItem{{Key: key, State: job.State{Phase: job.Collected, At: 9},
			Proof: (&job.Proof{Sig: make([]byte, 64)}).Encode()}}},
		&wire.StoreRequest{Jobs: []wire.JobEnvelope{{Signed: []byte{1}, State: claimed, Proof: (&job.Proof{Claim: []byte{1}}).Encode()}}},
		&wire.CollectRequest{Keys: [][]byte{key}, At: 9, Proofs: [][]byte{make([]byte, 64)}},
	}
}

// FuzzDecodeJobMessages decodes arbitrary bytes as every job-protocol
// message: never a panic; what decodes re-encodes and decodes the same.
func FuzzDecodeJobMessages(f *testing.F) {
	for _, m := range jobMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range jobMsgs() {
			checkDecode(t, proto, b)
		}
	})
}

// TestJobMessageBounds: every job message refuses counts over its bounds.
func TestJobMessageBounds(t *testing.T) {
	key := make([]byte, 36)
	many := func(n int) []wire.JobEnvelope {
		out := make([]wire.JobEnvelope, n)
		for i := range out {
			out[i].Signed = []byte{1}
		}
		return out
	}
	keys := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = key
		}
		return out
	}
	receipts := func(n int, job uint16) []wire.StoreReceipt {
		out := make([]wire.StoreReceipt, n)
		for i := range out {
			out[i] = wire.StoreReceipt{Cert: []byte{1}, Jobs: []uint16{job}, Sig: make([]byte, 64)}
		}
		return out
	}
	items := func(n int) []wire.SyncItem {
		out := make([]wire.SyncItem, n)
		for i := range out {
			out[i].Key = key
		}
		return out
	}
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"store at bound", &wire.StoreRequest{Jobs: many(wire.MaxJobsPerStore)}, true},
		{"store over bound", &wire.StoreRequest{Jobs: many(wire.MaxJobsPerStore + 1)}, false},
		{"empty store", &wire.StoreRequest{}, false},
		{"oversized job", &wire.StoreRequest{Jobs: []wire.JobEnvelope{{Signed: make([]byte, job.MaxSignedSize+1)}}}, false},
		{"bad state", &wire.StoreRequest{Jobs: []wire.JobEnvelope{{Signed: []byte{1}, State: job.State{Phase: job.TempClaimed}}}}, false},
		{"too many certs", &wire.StoreRequest{Jobs: many(1), Certs: keys(wire.MaxCertsPerMsg + 1)}, false},
		{"get at bound", &wire.GetRequest{Keys: keys(wire.MaxJobsPerStore)}, true},
		{"get over bound", &wire.GetRequest{Keys: keys(wire.MaxJobsPerStore + 1)}, false},
		{"long key", &wire.GetRequest{Keys: [][]byte{make([]byte, wire.MaxJobKeyLen+1)}}, false},
		{"sync at bound", &wire.SyncRequest{Items: items(wire.MaxSyncItems)}, true},
		{"sync over bound", &wire.SyncRequest{Items: items(wire.MaxSyncItems + 1)}, false},
		{"need over bound", &wire.SyncResponse{Need: keys(wire.MaxSyncItems + 1)}, false},
		{"sync proof at bound", &wire.SyncRequest{Items: []wire.SyncItem{{Key: key, Proof: make([]byte, job.MaxProofSize)}}}, true},
		{"sync proof over bound", &wire.SyncRequest{Items: []wire.SyncItem{{Key: key, Proof: make([]byte, job.MaxProofSize+1)}}}, false},
		{"newer proof over bound", &wire.SyncResponse{Newer: []wire.SyncItem{{Key: key, Proof: make([]byte, job.MaxProofSize+1)}}}, false},
		{"store proof over bound", &wire.StoreRequest{Jobs: []wire.JobEnvelope{{Signed: []byte{1}, Proof: make([]byte, job.MaxProofSize+1)}}}, false},
		{"receipts at bound", &wire.StoreResponse{Results: make([]wire.StoreResult, 1), Receipts: receipts(wire.MaxReceiptsPerStore, 0)}, true},
		{"receipts over bound", &wire.StoreResponse{Results: make([]wire.StoreResult, 1), Receipts: receipts(wire.MaxReceiptsPerStore+1, 0)}, false},
		{"receipt for a job not in the store", &wire.StoreResponse{Results: make([]wire.StoreResult, 1), Receipts: receipts(1, 1)}, false},
		{"receipt with a short signature", &wire.StoreResponse{Results: make([]wire.StoreResult, 1), Receipts: []wire.StoreReceipt{{Cert: []byte{1}, Jobs: []uint16{0}, Sig: make([]byte, 63)}}}, false},
		{"receipt without a certificate", &wire.StoreResponse{Results: make([]wire.StoreResult, 1), Receipts: []wire.StoreReceipt{{Jobs: []uint16{0}, Sig: make([]byte, 64)}}}, false},
		{"collect with its proofs", &wire.CollectRequest{Keys: keys(2), At: 1, Proofs: [][]byte{make([]byte, 64), make([]byte, 64)}}, true},
		{"collect proof at bound", &wire.CollectRequest{Keys: keys(1), At: 1, Proofs: [][]byte{make([]byte, wire.MaxCollectProofBytes)}}, true},
		{"collect without proofs", &wire.CollectRequest{Keys: keys(2), At: 1}, false},
		{"collect with an empty proof", &wire.CollectRequest{Keys: keys(1), At: 1, Proofs: [][]byte{{}}}, false},
		{"collect proof over bound", &wire.CollectRequest{Keys: keys(1), At: 1, Proofs: [][]byte{make([]byte, wire.MaxCollectProofBytes+1)}}, false},
	} {
		err := c.msg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
