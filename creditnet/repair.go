package creditnet

import (
	"context"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/creditclient"
	"github.com/up-pool/up/dht/keyspace"
)

// RoundStats reports one repair round.
type RoundStats struct {
	Clients int // clients whose receipts this node held at the round's start
	Pushes  int // puts that succeeded (to a node not known to hold the receipts)
	Failed  int // puts that failed
	Handed  int // clients whose receipts this node deleted: not among their r closest, which all took them
	Elapsed time.Duration
}

func (s *Service) repairLoop() {
	t := time.NewTicker(s.cfg.RepairInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			st := s.RepairRound(s.ctx)
			s.log.Debug("credit repair round", "clients", st.Clients, "pushes", st.Pushes, "failed", st.Failed,
				"handed", st.Handed, "elapsed", st.Elapsed)
		}
	}
}

// snapshot is one client's receipts as a round sees them.
type snapshot struct {
	client  string
	pos     keyspace.Pos
	encs    [][]byte
	pushed  map[peer.ID]bool
	version uint64
}

func (s *Service) snapshots() []snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]snapshot, 0, len(s.accounts))
	for c, a := range s.accounts {
		sn := snapshot{client: c, pos: a.pos, pushed: map[peer.ID]bool{}, version: a.version}
		for _, ks := range a.projects {
			for _, k := range ks {
				sn.encs = append(sn.encs, k.enc)
			}
		}
		for p := range a.pushed {
			sn.pushed[p] = true
		}
		out = append(out, sn)
	}
	return out
}

// RepairRound pushes each client's receipts to those of its r live
// closest that have not taken them since they last changed here, and
// deletes the receipts of a client this node is no longer among the r
// closest of, once they all took them.
func (s *Service) RepairRound(ctx context.Context) RoundStats {
	start := time.Now()
	var st RoundStats
	self := s.ep.ID()
	probe := s.dht.NewProber()
	snaps := s.snapshots()
	st.Clients = len(snaps)
	for _, sn := range snaps {
		if ctx.Err() != nil {
			break
		}
		nearest := probe.NearestLive(ctx, sn.pos, s.r)
		took := []peer.ID{}
		for _, p := range nearest {
			if p == self || sn.pushed[p] {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
			_, _, err := creditclient.Put(pctx, s.ep, p, sn.encs)
			cancel()
			if err != nil {
				st.Failed++
				continue
			}
			st.Pushes++
			took = append(took, p)
		}
		if s.markPushed(sn, took, nearest, slices.Contains(nearest, self)) {
			st.Handed++
		}
	}
	st.Elapsed = time.Since(start)
	return st
}

// markPushed records the nodes that took sn's receipts, unless they
// changed meanwhile, and deletes them here when this node is not among
// nearest and all of nearest took them; it reports the deletion.
func (s *Service) markPushed(sn snapshot, took, nearest []peer.ID, among bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[sn.client]
	if a == nil || a.version != sn.version {
		return false
	}
	for _, p := range took {
		a.pushed[p] = true
	}
	if among || len(nearest) < s.r {
		return false
	}
	for _, p := range nearest {
		if !a.pushed[p] {
			return false
		}
	}
	b := s.st.NewBatch()
	for name := range a.projects {
		b.Delete(accountKey([]byte(sn.client), name))
	}
	if err := b.Commit(true); err != nil {
		s.log.Error("credit hand-off", "err", err)
		return false
	}
	delete(s.accounts, sn.client)
	return true
}
