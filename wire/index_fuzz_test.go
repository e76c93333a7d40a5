package wire_test

import (
	"testing"

	"github.com/up-pool/up/wire"
)

func indexMsgs() []wire.Validator {
	key := make([]byte, 36)
	return []wire.Validator{
		&wire.IndexWriteRequest{Entries: []wire.IndexWrite{{Keyword: "lhc", Listing: []byte{1, 2}}}, Certs: [][]byte{{3}}},
		&wire.IndexWriteResponse{Results: []wire.StoreResult{{Status: wire.StatusOK}}},
		&wire.IndexWithdrawRequest{Items: []wire.IndexRef{{Keyword: "lhc", Job: key}}},
		&wire.IndexWithdrawResponse{Removed: 3},
		&wire.IndexQueryRequest{Query: "lhc AND NOT bw:modem", Keyword: "lhc", N: 4, Page: true, AfterCreated: 5, AfterJob: key},
		&wire.IndexQuerySkipRequest{Query: wire.IndexQueryRequest{Query: "lhc", Keyword: "lhc", N: 1}, Skip: [][]byte{key}, Decline: [][]byte{key}},
		&wire.IndexQuerySkipRequest{Query: wire.IndexQueryRequest{Query: "lhc", Keyword: "lhc", N: 1}, Decline: [][]byte{key}, Reasons: []wire.SkipReason{wire.SkipSameUnit}},
		&wire.IndexQueryResponse{Hits: []wire.IndexHit{{Job: key, Project: "lhc", Created: 9, Keywords: []string{"lhc"}}}, More: true},
	}
}

// FuzzDecodeIndexMessages decodes arbitrary bytes as every index-protocol
// message: never a panic; what decodes re-encodes and decodes the same.
func FuzzDecodeIndexMessages(f *testing.F) {
	for _, m := range indexMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range indexMsgs() {
			checkDecode(t, proto, b)
		}
	})
}
