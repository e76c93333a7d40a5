package creditnet

import (
	"encoding/json"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/quota"
)

// storedAccount is a quota.Account as the store keeps it, in CBOR with
// job keys as byte strings. It was JSON, whose strings turned a job
// key's bytes that are not UTF-8 into U+FFFD: a restarted record node
// loaded holds under keys no report matched (a client's slots stayed
// taken until the holds ran out) and a forgotten list of reported jobs
// (a report could count twice).
type storedAccount struct {
	_        struct{} `cbor:",toarray"`
	Quota    int
	Held     []storedHold
	Errors   uint64
	Valid    uint64
	Lies     uint64
	Reported [][]byte
}

// storedHold is one job held: its key and the end of its hold (Unix ms
// on the record node's clock).
type storedHold struct {
	_   struct{} `cbor:",toarray"`
	Job []byte
	End int64
}

// encodeAccount is a's stored form.
func encodeAccount(a *quota.Account) ([]byte, error) {
	st := storedAccount{Quota: a.Quota, Errors: a.Errors, Valid: a.Valid, Lies: a.Lies,
		Held: make([]storedHold, 0, len(a.Held)), Reported: make([][]byte, len(a.Reported))}
	for k, end := range a.Held {
		st.Held = append(st.Held, storedHold{Job: []byte(k), End: end})
	}
	for i, k := range a.Reported {
		st.Reported[i] = []byte(k)
	}
	return codec.Marshal(&st)
}

// decodeAccount reads a stored account: the CBOR form, or the JSON one
// written before it (its keys as JSON left them).
func decodeAccount(b []byte) (*quota.Account, error) {
	if len(b) > 0 && b[0] == '{' {
		var a quota.Account
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("quota account (JSON): %w", err)
		}
		return &a, nil
	}
	var st storedAccount
	if err := codec.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("quota account: %w", err)
	}
	a := &quota.Account{Quota: st.Quota, Errors: st.Errors, Valid: st.Valid, Lies: st.Lies,
		Held: make(map[string]int64, len(st.Held)), Reported: make([]string, len(st.Reported))}
	for _, h := range st.Held {
		a.Held[string(h.Job)] = h.End
	}
	for i, k := range st.Reported {
		a.Reported[i] = string(k)
	}
	return a, nil
}
