package pool

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// evidenceNS holds refused forgeries: "evidence/<seq, 8 bytes big-endian>".
const evidenceNS = "evidence"

// MaxEvidence is how many refused forgeries a node keeps, in memory and
// on disk; older ones are deleted as new ones come.
const MaxEvidence = 1000

// Evidence is one refused forgery: a replicated state an admitted party
// sent without valid proof. Item is the state as it arrived (the key,
// state and proof, re-encoded canonically as a wire.SyncItem). It came
// over the sender's authenticated connection, so this node knows who sent
// it; but the RPC body is not signed by the sender's key, so the record
// proves it to a third party only as far as that party trusts this node
// (or finds the same sender in other nodes' records). The proof inside, if
// any, is signed, and shows what was forged.
type Evidence struct {
	_        struct{} `cbor:",toarray"`
	Seq      uint64   `json:"seq"`
	At       int64    `json:"at_ms"` // this node's clock, Unix ms
	Sender   string   `json:"sender"`
	Peer     string   `json:"peer"`
	Protocol string   `json:"protocol"`
	Job      string   `json:"job"` // the job key, hex
	Phase    string   `json:"phase"`
	Reason   string   `json:"reason"`
	Item     []byte   `json:"item"` // CBOR wire.SyncItem
}

// evidenceLog is the last MaxEvidence records, oldest first.
type evidenceLog struct {
	mu   sync.Mutex
	recs []Evidence
	next uint64
}

func (s *source) String() string {
	if s == nil {
		return "this node"
	}
	return fmt.Sprintf("%q (%s)", s.name, s.peer)
}

// srcOf names a peer this node called (or that called it) for evidence.
func (p *Pool) srcOf(t peer.ID, proto string) *source {
	name := t.String()
	if adm, err := p.ep.WaitAdmitted(p.ctx, t); err == nil && adm.Identity != nil {
		name = adm.Identity.Name
	}
	return &source{name: name, peer: t, proto: proto}
}

// refuseForgery counts a refused state against its sender and keeps it as
// evidence (in memory and on disk, the last MaxEvidence).
func (p *Pool) refuseForgery(src *source, key []byte, st job.State, proof []byte, why error) {
	if src == nil {
		return
	}
	p.mForged.WithLabelValues(src.name).Inc()
	item, _ := codec.Marshal(&wire.SyncItem{Key: key, State: st, Proof: proof})
	ev := &p.evidence
	ev.mu.Lock()
	defer ev.mu.Unlock()
	rec := Evidence{Seq: ev.next, At: p.nowMS(), Sender: src.name, Peer: src.peer.String(), Protocol: src.proto,
		Job: hex.EncodeToString(key), Phase: st.Phase.String(), Reason: why.Error(), Item: item}
	ev.next++
	ev.recs = append(ev.recs, rec)
	b := p.st.NewBatch()
	if v, err := codec.Marshal(&rec); err == nil {
		b.Put(evidenceKey(rec.Seq), v)
	}
	if len(ev.recs) > MaxEvidence {
		b.Delete(evidenceKey(ev.recs[0].Seq))
		ev.recs = append(ev.recs[:0:0], ev.recs[1:]...)
	}
	if err := b.Commit(false); err != nil {
		p.log.Warn("evidence", "err", err)
	}
	p.log.Warn("refused forged state", "sender", src.name, "peer", src.peer, "job", rec.Job, "phase", rec.Phase, "reason", rec.Reason)
}

func evidenceKey(seq uint64) []byte {
	return store.Key(evidenceNS, binary.BigEndian.AppendUint64(nil, seq))
}

// Evidence returns the refused forgeries kept here, oldest first.
func (p *Pool) Evidence() []Evidence {
	p.evidence.mu.Lock()
	defer p.evidence.mu.Unlock()
	return append([]Evidence(nil), p.evidence.recs...)
}

// loadEvidence reads the kept records and deletes any past MaxEvidence.
func (p *Pool) loadEvidence() error {
	ev := &p.evidence
	err := p.st.Scan(store.Key(evidenceNS), func(_, v []byte) bool {
		var rec Evidence
		if codec.Unmarshal(v, &rec) == nil {
			ev.recs = append(ev.recs, rec)
			ev.next = rec.Seq + 1
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("load evidence: %w", err)
	}
	if over := len(ev.recs) - MaxEvidence; over > 0 {
		b := p.st.NewBatch()
		for _, r := range ev.recs[:over] {
			b.Delete(evidenceKey(r.Seq))
		}
		ev.recs = ev.recs[over:]
		if err := b.Commit(false); err != nil {
			return fmt.Errorf("trim evidence: %w", err)
		}
	}
	return nil
}
