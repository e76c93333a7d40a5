package wire_test

import (
	"testing"

	"github.com/up-pool/up/wire"
)

// commitMsgs are valid commit–reveal messages used as fuzz seeds.
func commitMsgs() []wire.Validator {
	return []wire.Validator{
		&wire.CommitPost{Signed: []byte{1}, Commit: []byte{2}},
		&wire.CommitPost{Signed: []byte{1}, Cert: []byte{3}, Commit: []byte{2}},
		&wire.CommitCount{Jobs: 2},
		&wire.CommitGetRequest{Board: make([]byte, 32)},
		&wire.CommitGetResponse{Commits: [][]byte{{1}, {2}}, Jobs: 2},
	}
}

// FuzzDecodeCommitMessages decodes arbitrary bytes as every commit–reveal
// message: never a panic; what decodes re-encodes and decodes the same.
func FuzzDecodeCommitMessages(f *testing.F) {
	for _, m := range commitMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range commitMsgs() {
			checkDecode(t, proto, b)
		}
	})
}

// TestCommitBounds: each message refuses what its bounds forbid.
func TestCommitBounds(t *testing.T) {
	bad := []wire.Validator{
		&wire.CommitPost{Commit: []byte{2}},
		&wire.CommitPost{Signed: []byte{1}},
		&wire.CommitPost{Signed: []byte{1}, Commit: make([]byte, wire.MaxCommitBytes+1)},
		&wire.CommitCount{Jobs: wire.MaxBoardCommits + 1},
		&wire.CommitGetRequest{Board: make([]byte, 31)},
		&wire.CommitGetResponse{Commits: [][]byte{{1}}, Jobs: 2},
		&wire.CommitGetResponse{Commits: make([][]byte, wire.MaxBoardCommits+1)},
		&wire.CommitGetResponse{Commits: [][]byte{{}}},
	}
	for _, m := range bad {
		if m.Validate() == nil {
			t.Errorf("%#v validated", m)
		}
	}
}
