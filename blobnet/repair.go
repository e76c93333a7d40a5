package blobnet

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/store"
)

// RoundStats reports one repair round.
type RoundStats struct {
	Held       int   // blobs held at the round's start
	Spread     int   // blobs this node pushed to their r closest (held whole, unexpired)
	Offers     int   // offers that were answered
	Repaired   int   // offers answered with missing chunks, which were then sent
	ChunksSent int   // chunks sent
	BytesSent  int64 // chunk bytes sent
	Failed     int   // pushes that failed (the target is marked dead and replaced)
	Expired    int   // blobs deleted: their statement expired on this node's clock
	Incomplete int   // blobs deleted: still missing chunks IncompleteKeep after their offer
	Handed     int   // blobs deleted: not among their r closest, which all hold them
	Elapsed    time.Duration
}

// count adds one push to the stats; nil stats count nothing.
func (st *RoundStats) count(p blobclient.Pushed, err error) {
	if st == nil {
		return
	}
	if err != nil {
		st.Failed++
	}
	if p.RequestBytes > 0 && (err == nil || p.Sent > 0) {
		st.Offers++
	}
	if p.Missing > 0 {
		st.Repaired++
	}
	st.ChunksSent += p.Sent
	st.BytesSent += p.Bytes
}

func (s *Service) repairLoop() {
	for {
		t := time.NewTimer(s.jitter())
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
			st := s.RepairRound(s.ctx)
			s.log.Debug("blob repair round", "held", st.Held, "spread", st.Spread, "repaired", st.Repaired,
				"chunks", st.ChunksSent, "failed", st.Failed, "expired", st.Expired, "handed", st.Handed, "elapsed", st.Elapsed)
		}
	}
}

// RepairRound runs one repair round: it deletes the blobs whose statement
// expired on this node's clock and those still incomplete IncompleteKeep
// after their offer; then, for every blob held whole, it makes sure the
// blob's r live closest hold it, by the republish rule — the closest
// offers it to the others, another of the r to the closest, each sending
// only the chunks the other lacks — and a holder that is none of the r
// offers it to all of them and deletes its copy once they all hold it.
func (s *Service) RepairRound(ctx context.Context) RoundStats {
	start := time.Now()
	var st RoundStats
	s.ExpireNow(&st)
	blobs := s.complete(&st)
	probe := s.dht.NewProber()
	for _, h := range blobs {
		if ctx.Err() != nil {
			break
		}
		st.Spread++
		bctx, cancel := context.WithTimeout(ctx, s.cfg.PlaceTimeout)
		view, holding := s.spread(bctx, h, false, func(ex map[peer.ID]bool) []peer.ID {
			return without(probe.NearestLive(bctx, h.pos, s.r+len(ex)), ex, s.r)
		}, &st)
		cancel()
		s.handOff(h, view, holding, &st)
	}
	st.Elapsed = time.Since(start)
	return st
}

// complete returns the blobs held whole, counting those held in st.
func (s *Service) complete(st *RoundStats) []*held {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Held = len(s.blobs)
	out := make([]*held, 0, len(s.blobs))
	for _, h := range s.blobs {
		if h.missing == 0 {
			out = append(out, h)
		}
	}
	return out
}

// dropTombstonesLocked forgets the withdrawals whose refusal ended by
// now (ms). s.mu is held.
func (s *Service) dropTombstonesLocked(now int64) {
	var ended []string
	for k, t := range s.gone {
		if now >= t.until {
			ended = append(ended, k)
		}
	}
	if len(ended) == 0 {
		return
	}
	b := s.st.NewBatch()
	for _, k := range ended {
		b.Delete(store.Key(goneNS, []byte(k)))
	}
	if err := b.Commit(false); err != nil {
		s.log.Error("blob tombstones", "err", err)
		return
	}
	for _, k := range ended {
		delete(s.gone, k)
	}
}

// ExpireNow deletes the blobs whose statement expired on this node's
// clock (job.Expired: past the expiry by 2·T_skew) and those still
// missing chunks IncompleteKeep after their offer, counting them in st
// when not nil.
func (s *Service) ExpireNow(st *RoundStats) {
	now := s.nowMS()
	keep := s.cfg.IncompleteKeep.Milliseconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropTombstonesLocked(now)
	for _, h := range s.blobs {
		why := ""
		switch {
		case job.Expired(h.expires, now):
			why = "expired"
		case h.missing > 0 && now-h.offered > keep:
			why = "incomplete"
		default:
			continue
		}
		var tomb *tombstone
		if why == "expired" {
			// Its statement may have superseded an older one a node that
			// missed the withdrawal still holds: refuse that one until it
			// would have expired too.
			tomb = &tombstone{created: h.created, until: max(h.outlive, h.expires) + 2*job.ExpiryMarginMS}
		}
		if _, err := s.deleteLocked(h, tomb); err != nil {
			s.log.Error("blob expiry", "blob", h.adm.Key, "err", err)
			continue
		}
		s.mDeleted.WithLabelValues(why).Inc()
		if st == nil {
			continue
		}
		if why == "expired" {
			st.Expired++
		} else {
			st.Incomplete++
		}
	}
}
