package wire_test

import (
	"testing"

	"github.com/up-pool/up/wire"
)

// claimMsgs are valid claim-protocol messages used as fuzz seeds.
func claimMsgs() []wire.Validator {
	key := make([]byte, 36)
	return []wire.Validator{
		&wire.ClaimRequest{Job: key},
		&wire.ClaimResponse{Reply: []byte{1}},
		&wire.ConfirmRequest{Job: key, Start: 5, Replies: [][]byte{{1}, {2}}},
		&wire.ConfirmResponse{Accept: []byte{1}},
		&wire.CertifyRequest{Job: key, Start: 5, Accepts: [][]byte{{1}, {2}, {3}, {4}}},
		&wire.ReleaseRequest{Job: key},
		&wire.ReleaseRequest{Job: key, Start: 5, Sig: make([]byte, 64)},
		&wire.ReleaseRequest{Job: key, Repair: true},
		&wire.ReleaseRequest{Job: key, Reason: wire.SkipFailed},
		&wire.ResultSubmit{Envelope: []byte{1}, At: 5},
		&wire.ResultSubmit{Envelope: []byte{1}, At: 5, Sent: [][]byte{{1}}, Start: 5, Accepts: [][]byte{{1}, {2}}},
		&wire.ClaimManyRequest{Jobs: [][]byte{key, append([]byte{1}, key[1:]...)}},
		&wire.ClaimManyRequest{Jobs: [][]byte{key}, Tickets: [][]byte{{1}}},
		&wire.ClaimManyResponse{Replies: [][]byte{{1}, {2}}},
		&wire.ConfirmManyRequest{Items: []wire.ConfirmRequest{{Job: key, Start: 5, Replies: [][]byte{{1}, {2}}}}},
		&wire.ConfirmManyResponse{Accepts: [][]byte{{1}, nil}, Refused: []string{"", "no"}},
		&wire.ResultManyRequest{Items: []wire.ResultSubmit{{Envelope: []byte{1}, At: 5}, {Envelope: []byte{2}, At: 5, Start: 5, Accepts: [][]byte{{1}, {2}}}}},
		&wire.ResultManyResponse{Refused: []string{"", "no"}},
		&wire.ClaimManySharedRequest{Jobs: [][]byte{key}, Tickets: oneShared(1)},
		&wire.ClaimManySharedResponse{Replies: oneShared(2)},
		&wire.ConfirmManySharedRequest{Items: []wire.ConfirmShared{{Job: key, Start: 5, Replies: 2}}, Replies: oneShared(2)},
		&wire.ConfirmManySharedResponse{Accepts: oneShared(1), Refused: []string{"", "no"}},
		&wire.ResultManySharedRequest{Items: []wire.ResultShared{{Envelope: []byte{1}, At: 5, Start: 5, Accepts: 2}, {Envelope: []byte{2}, At: 5}},
			Sent: [][][]byte{{{7}}}, Accepts: oneShared(2)},
	}
}

// oneShared is n shared replies of one signer, the first with a path.
func oneShared(n int) wire.SharedReplies {
	s := wire.SharedReplies{Signers: []wire.ReplySigner{{Cert: []byte{1}, Position: []byte{2}, PeerSig: []byte{3}}}}
	for i := range n {
		r := wire.SharedReply{Statement: []byte{byte(10 + i)}}
		if i == 0 {
			r.Path = []byte{4}
		}
		s.Replies = append(s.Replies, r)
	}
	return s
}

// FuzzDecodeClaimMessages decodes arbitrary bytes as every claim-protocol
// message: never a panic; what decodes re-encodes and decodes the same.
func FuzzDecodeClaimMessages(f *testing.F) {
	for _, m := range claimMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range claimMsgs() {
			checkDecode(t, proto, b)
		}
	})
}

// TestClaimMessageBounds: the claim messages that carry acceptances and
// release signatures refuse what is over their bounds.
func TestClaimMessageBounds(t *testing.T) {
	key := make([]byte, 36)
	accepts := func(n, size int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = make([]byte, size)
		}
		return out
	}
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"acceptance at bound", &wire.ConfirmResponse{Accept: make([]byte, wire.MaxReplyBytes)}, true},
		{"acceptance over bound", &wire.ConfirmResponse{Accept: make([]byte, wire.MaxReplyBytes+1)}, false},
		{"no acceptance", &wire.ConfirmResponse{}, false},
		{"certify at bound", &wire.CertifyRequest{Job: key, Start: 1, Accepts: accepts(wire.MaxReplies, wire.MaxReplyBytes)}, true},
		{"certify too many", &wire.CertifyRequest{Job: key, Start: 1, Accepts: accepts(wire.MaxReplies+1, 1)}, false},
		{"certify acceptance too large", &wire.CertifyRequest{Job: key, Start: 1, Accepts: accepts(1, wire.MaxReplyBytes+1)}, false},
		{"certify empty", &wire.CertifyRequest{Job: key, Start: 1}, false},
		{"certify without start", &wire.CertifyRequest{Job: key, Accepts: accepts(1, 1)}, false},
		{"release of a temporary claim", &wire.ReleaseRequest{Job: key}, true},
		{"signed release", &wire.ReleaseRequest{Job: key, Start: 1, Sig: make([]byte, 64)}, true},
		{"release with a short signature", &wire.ReleaseRequest{Job: key, Start: 1, Sig: make([]byte, 63)}, false},
		{"release signature without start", &wire.ReleaseRequest{Job: key, Sig: make([]byte, 64)}, false},
		{"release start without signature", &wire.ReleaseRequest{Job: key, Start: 1}, false},
		{"result without certificate", &wire.ResultSubmit{Envelope: []byte{1}, At: 1}, true},
		{"result carrying a certificate", &wire.ResultSubmit{Envelope: []byte{1}, At: 1, Start: 1, Accepts: accepts(wire.MaxReplies, wire.MaxReplyBytes)}, true},
		{"result certificate too many", &wire.ResultSubmit{Envelope: []byte{1}, At: 1, Start: 1, Accepts: accepts(wire.MaxReplies+1, 1)}, false},
		{"result certificate acceptance too large", &wire.ResultSubmit{Envelope: []byte{1}, At: 1, Start: 1, Accepts: accepts(1, wire.MaxReplyBytes+1)}, false},
		{"result certificate without start", &wire.ResultSubmit{Envelope: []byte{1}, At: 1, Accepts: accepts(1, 1)}, false},
		{"result start without certificate", &wire.ResultSubmit{Envelope: []byte{1}, At: 1, Start: 1}, false},
	} {
		err := c.msg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestClaimManyBounds: the many-job claim messages refuse an empty or
// oversized list, a job named twice, tickets that do not pair with the
// jobs, and a confirm answer neither accepted nor refused (or both).
func TestClaimManyBounds(t *testing.T) {
	key := func(b byte) []byte { k := make([]byte, 36); k[0] = b; return k }
	jobs := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = key(byte(i))
		}
		return out
	}
	item := func(b byte) wire.ConfirmRequest {
		return wire.ConfirmRequest{Job: key(b), Start: 1, Replies: [][]byte{{1}}}
	}
	results := func(n, size int) []wire.ResultSubmit {
		out := make([]wire.ResultSubmit, n)
		for i := range out {
			out[i] = wire.ResultSubmit{Envelope: make([]byte, size), At: 1}
		}
		return out
	}
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"claim of the most jobs", &wire.ClaimManyRequest{Jobs: jobs(wire.MaxClaimMany)}, true},
		{"claim of too many jobs", &wire.ClaimManyRequest{Jobs: jobs(wire.MaxClaimMany + 1)}, false},
		{"claim of no job", &wire.ClaimManyRequest{}, false},
		{"claim naming a job twice", &wire.ClaimManyRequest{Jobs: [][]byte{key(1), key(1)}}, false},
		{"claim with a ticket per job", &wire.ClaimManyRequest{Jobs: jobs(2), Tickets: [][]byte{{1}, {2}}}, true},
		{"claim with fewer tickets than jobs", &wire.ClaimManyRequest{Jobs: jobs(2), Tickets: [][]byte{{1}}}, false},
		{"claim ticket too large", &wire.ClaimManyRequest{Jobs: jobs(1), Tickets: [][]byte{make([]byte, wire.MaxReplyBytes+1)}}, false},
		{"response without replies", &wire.ClaimManyResponse{}, false},
		{"response reply too large", &wire.ClaimManyResponse{Replies: [][]byte{make([]byte, wire.MaxReplyBytes+1)}}, false},
		{"confirm of two jobs", &wire.ConfirmManyRequest{Items: []wire.ConfirmRequest{item(1), item(2)}}, true},
		{"confirm naming a job twice", &wire.ConfirmManyRequest{Items: []wire.ConfirmRequest{item(1), item(1)}}, false},
		{"confirm of no job", &wire.ConfirmManyRequest{}, false},
		{"confirm item without replies", &wire.ConfirmManyRequest{Items: []wire.ConfirmRequest{{Job: key(1), Start: 1}}}, false},
		{"answer accepted and refused", &wire.ConfirmManyResponse{Accepts: [][]byte{{1}}, Refused: []string{"why"}}, false},
		{"answer neither", &wire.ConfirmManyResponse{Accepts: [][]byte{nil}, Refused: []string{""}}, false},
		{"answer refusals unpaired", &wire.ConfirmManyResponse{Accepts: [][]byte{{1}}}, false},
		{"answer refusal too long", &wire.ConfirmManyResponse{Accepts: [][]byte{nil}, Refused: []string{string(make([]byte, wire.MaxRefusalLen+1))}}, false},
		{"results of two jobs", &wire.ResultManyRequest{Items: results(2, 10)}, true},
		{"results of the most jobs", &wire.ResultManyRequest{Items: results(wire.MaxClaimMany, 10)}, true},
		{"results of too many jobs", &wire.ResultManyRequest{Items: results(wire.MaxClaimMany+1, 10)}, false},
		{"results of no job", &wire.ResultManyRequest{}, false},
		{"results over the bytes bound", &wire.ResultManyRequest{Items: results(2, wire.MaxResultManyBytes/2+1)}, false},
		{"result item without time", &wire.ResultManyRequest{Items: []wire.ResultSubmit{{Envelope: []byte{1}}}}, false},
		{"results answered", &wire.ResultManyResponse{Refused: []string{"", "why"}}, true},
		{"results answer empty", &wire.ResultManyResponse{}, false},
		{"results refusal too long", &wire.ResultManyResponse{Refused: []string{string(make([]byte, wire.MaxRefusalLen+1))}}, false},
	} {
		if err := c.msg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
