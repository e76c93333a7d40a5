package creditnet

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/up-pool/up/quota"
)

// TestStoredAccountKeepsBinaryKeys: an account's job keys, which are
// bytes and not text, come back from the store as they went in; the
// JSON written before kept them only when they were UTF-8 (control: a
// CID's bytes through JSON come back altered) and still loads.
func TestStoredAccountKeepsBinaryKeys(t *testing.T) {
	cid := string([]byte{0x01, 0x71, 0x12, 0x20, 0xff, 0xfe, 0x80, 0x00})
	a := &quota.Account{Quota: 16, Held: map[string]int64{cid: 1700000000000, "text": 5}, Errors: 1, Valid: 7, Lies: 2,
		Reported: []string{cid, "\xc3\x28"}}
	b, err := encodeAccount(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAccount(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Quota != a.Quota || got.Errors != a.Errors || got.Valid != a.Valid || got.Lies != a.Lies ||
		!maps.Equal(got.Held, a.Held) || !slices.Equal(got.Reported, a.Reported) {
		t.Fatalf("stored account came back as %+v, want %+v", got, a)
	}
	old, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := decodeAccount(old)
	if err != nil {
		t.Fatalf("the JSON form no longer loads: %v", err)
	}
	if _, ok := legacy.Held[cid]; ok || legacy.Quota != 16 {
		t.Fatalf("control: JSON kept a binary key (or lost the quota): %+v", legacy)
	}
	if _, err := decodeAccount([]byte{0x86, 0x01}); err == nil {
		t.Fatal("a cut-off account decoded")
	}
}
