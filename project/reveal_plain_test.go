package project

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	"github.com/up-pool/up/job"
)

// TestJobSpecsSkipsPlainJobs: the ledger reads no spec for a job this
// process recorded whose spec cannot ask for commit–reveal (job.
// CannotUseCommit), once; it reads a commit–reveal job's spec, and every
// spec again after the ledger is reopened (another process knows
// nothing). Control: the plain job's spec is in the ledger — a reopened
// ledger returns it — so only the in-memory note kept it out.
func TestJobSpecsSkipsPlainJobs(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	plain := testSpec(func(s *job.Spec) { s.Version = s.LeastVersion() })
	commit := testSpec(func(s *job.Spec) { s.Commit, s.RevealWait = 2, 60_000; s.Version = s.LeastVersion() })
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	b := &batchRecord{digest: []byte("d"), source: "test", units: 2, copies: 1, unitIDs: map[int]int64{}}
	var jobs []unitJob
	var cids []string
	for i, s := range []*job.Spec{plain, commit} {
		signed, err := job.Sign(s, key)
		if err != nil {
			t.Fatal(err)
		}
		cid := signed.CID().String()
		cids = append(cids, cid)
		jobs = append(jobs, unitJob{idx: i, PreparedJob: PreparedJob{CID: cid, Signed: signed.Encode(), Listing: []byte("l")}})
	}
	if err := l.record(b, jobs, time.Now()); err != nil {
		t.Fatal(err)
	}
	specs, err := l.jobSpecs(cids)
	if err != nil {
		t.Fatal(err)
	}
	if _, read := specs[cids[0]]; read {
		t.Error("the plain job's spec was read from the ledger")
	}
	if s := specs[cids[1]]; s == nil || !s.UsesCommit() {
		t.Errorf("the commit–reveal job's spec: %+v", s)
	}
	if specs, err = l.jobSpecs(cids[:1]); err != nil || specs[cids[0]] == nil {
		t.Errorf("asked again, the plain job's spec: %v (%v); want it read this time", specs[cids[0]], err)
	}
	l.Close()
	if l, err = OpenLedger(path); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if specs, err = l.jobSpecs(cids); err != nil || len(specs) != 2 || specs[cids[0]].UsesCommit() {
		t.Fatalf("reopened: %d specs (%v), want both, the plain one without commit–reveal", len(specs), err)
	}
}
