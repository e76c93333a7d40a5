package pool

import (
	"bytes"
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// markSynced records, of items a target took in a sync that succeeded,
// the keys this node only hands on (handed): their target is where their
// state now is.
func markSynced(synced map[string]peer.ID, handed map[string]bool, t peer.ID, items []wire.SyncItem) {
	for _, it := range items {
		if handed[string(it.Key)] {
			synced[string(it.Key)] = t
		}
	}
}

// handedOn returns, of the lingering copies a round would drop, those
// that may go: the job's state went this round to its closest in a sync
// that succeeded (synced names that node), and, when this node holds the
// job's result, that node now serves the same result (the envelope whose
// digest the state names). The others stay for the next round's sync: a
// copy dropped after a failed sync, or before the closest fetched the
// result, may be the only one, and the job would be finished everywhere
// with its result nowhere.
func (p *Pool) handedOn(ctx context.Context, keys [][]byte, synced map[string]peer.ID) [][]byte {
	var out [][]byte
	check := map[peer.ID][][]byte{} // results the target must serve
	for _, k := range keys {
		t, ok := synced[string(k)]
		if !ok {
			continue
		}
		st, held := p.State(k)
		if _, has := p.Result(k); held && has && st.Phase == job.Finished {
			check[t] = append(check[t], k)
			continue
		}
		out = append(out, k)
	}
	for t, ks := range check {
		out = append(out, p.servedResults(ctx, t, ks)...)
	}
	return out
}

// servedResults returns, of keys, the finished jobs whose result node t
// serves: a well-formed envelope of the job with the digest this node's
// state names.
func (p *Pool) servedResults(ctx context.Context, t peer.ID, keys [][]byte) [][]byte {
	var out [][]byte
	for start := 0; start < len(keys); start += wire.MaxJobsPerStore {
		part := keys[start:min(start+wire.MaxJobsPerStore, len(keys))]
		var resp wire.ResultGetResponse
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RPCTimeout)
		err := p.call(cctx, t, wire.ProtoResultGet, &wire.ResultGetRequest{Keys: part}, wire.MaxResultsFrame, &resp, nil)
		cancel()
		if err != nil {
			p.log.Debug("lingering copies kept: their closest serves no results", "node", t, "err", err)
			return out
		}
		for i, b := range resp.Results {
			if i >= len(part) || len(b) == 0 {
				continue
			}
			env, err := result.Decode(b)
			if err != nil || env.VerifyOuter() != nil || !bytes.Equal(env.Job, part[i]) {
				continue
			}
			if st, ok := p.State(part[i]); ok && bytes.Equal(st.Result, env.Digest()) {
				out = append(out, part[i])
			}
		}
	}
	return out
}
