package blobnet

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/wire"
)

// placeRun is one placement of a blob on its r closest, which Replicate
// offers of the same blob wait for together.
type placeRun struct {
	done    chan struct{}
	holders int // set before done closes
}

// placeAndWait starts the placement of h on its r closest, or joins the
// one under way, and waits for it while ctx leaves time to answer (three
// quarters of what remains). It returns how many of the r closest hold h
// whole afterwards and whether the placement is still going on.
func (s *Service) placeAndWait(ctx context.Context, h *held) (uint16, bool) {
	s.mu.Lock()
	run := s.placing[h.key]
	if run == nil {
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			return 0, false
		}
		run = &placeRun{done: make(chan struct{})}
		s.placing[h.key] = run
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			pctx, cancel := context.WithTimeout(s.ctx, s.cfg.PlaceTimeout)
			n := s.place(pctx, h)
			cancel()
			s.mu.Lock()
			run.holders = n
			delete(s.placing, h.key)
			s.mu.Unlock()
			close(run.done)
		}()
	}
	s.mu.Unlock()
	var timeout <-chan time.Time
	if dl, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(dl) * 3 / 4) // this machine's timer, as the request's deadline
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-run.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return uint16(min(run.holders, 1<<16-1)), false
	case <-timeout:
	case <-ctx.Done():
	}
	return 0, true
}

// place pushes h to every other node of its r live closest (this node
// was given it by its project) and returns how many of them hold it
// whole, this node included when it is one of them. A node that is not
// among them deletes its copy once they all hold it.
func (s *Service) place(ctx context.Context, h *held) int {
	view, holding := s.spread(ctx, h, true, func(ex map[peer.ID]bool) []peer.ID { return s.placement(ctx, h, ex) }, nil)
	s.handOff(h, view, holding, nil)
	return len(holding)
}

// placement returns the live r closest nodes to h, leaving out those in
// ex. A node among them knows its neighbourhood, so its view decides; a
// node outside it (the project's guess was off) looks the key up.
func (s *Service) placement(ctx context.Context, h *held, ex map[peer.ID]bool) []peer.ID {
	view := without(s.dht.NearestLive(ctx, h.pos, s.r+len(ex)), ex, s.r)
	if slices.Contains(view, s.ep.ID()) {
		return view
	}
	found, err := s.dht.ClosestN(dht.WithPurpose(ctx, dht.PurposePlace), []byte(h.key), s.r+len(ex))
	if err != nil || len(found) == 0 {
		return view
	}
	var live []peer.ID
	for _, q := range without(found, ex, len(found)) {
		if s.dht.IsAlive(ctx, q) {
			live = append(live, q)
		}
	}
	return live[:min(len(live), s.r)]
}

// without returns the first n of ps not in ex.
func without(ps []peer.ID, ex map[peer.ID]bool, n int) []peer.ID {
	out := make([]peer.ID, 0, n)
	for _, p := range ps {
		if !ex[p] && len(out) < n {
			out = append(out, p)
		}
	}
	return out
}

// targets are the nodes of view this node pushes h to: all the others
// when all is set (a placement); else, by the republish rule, the others
// when this node is the closest, the closest when it is another of the
// r, and all of them when it is none (it hands the blob on).
func (s *Service) targets(view []peer.ID, all bool) []peer.ID {
	self := s.ep.ID()
	i := slices.Index(view, self)
	switch {
	case all || i == 0 || i < 0:
		return slices.DeleteFunc(slices.Clone(view), func(p peer.ID) bool { return p == self })
	default:
		return view[:1]
	}
}

// spread makes sure the targets of h's view hold h: it offers h to each
// and sends the chunks each lacks, in parallel; a target that fails is
// marked dead and the view taken again without it, up to
// replica.SyncAttempts times. It returns the last view and the nodes of
// it known to hold h whole (this node included when it does).
func (s *Service) spread(ctx context.Context, h *held, all bool, viewOf func(ex map[peer.ID]bool) []peer.ID, st *RoundStats) ([]peer.ID, map[peer.ID]bool) {
	failed := map[peer.ID]bool{}
	holding := map[peer.ID]bool{}
	var view []peer.ID
	for attempt := 0; attempt < replica.SyncAttempts && ctx.Err() == nil; attempt++ {
		view = viewOf(failed)
		var todo []peer.ID
		for _, t := range s.targets(view, all) {
			if !holding[t] {
				todo = append(todo, t)
			}
		}
		if len(todo) == 0 {
			break
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		retry := false
		for _, t := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pushed, err := s.pushTo(ctx, h, t)
				mu.Lock()
				defer mu.Unlock()
				st.count(pushed, err)
				if err != nil {
					s.dht.MarkDead(t)
					failed[t], retry = true, true
					return
				}
				holding[t] = pushed.Complete
			}()
		}
		wg.Wait()
		if !retry {
			break
		}
	}
	if self := s.ep.ID(); slices.Contains(view, self) {
		if _, complete := s.Holds([]byte(h.key)); complete {
			holding[self] = true
		}
	}
	for p, ok := range holding {
		if !ok || !slices.Contains(view, p) {
			delete(holding, p)
		}
	}
	return view, holding
}

// pushTo offers h to node t and sends the chunks it lacks.
func (s *Service) pushTo(ctx context.Context, h *held, t peer.ID) (blobclient.Pushed, error) {
	s.mu.Lock()
	der := s.certs[h.certRef]
	s.mu.Unlock()
	offer := &wire.BlobOffer{Statement: h.statement, Manifest: h.manifest, Cert: der}
	pushed, err := blobclient.Push(ctx, s.ep, t, offer, func(c cid.Cid) ([]byte, error) { return s.readChunk(c) },
		blobclient.PushConfig{Concurrency: s.cfg.PushConcurrency, Timeout: s.cfg.RPCTimeout})
	s.mPushed.Add(float64(pushed.Sent))
	s.mPushedB.Add(float64(pushed.Bytes))
	s.pushedN.Add(int64(pushed.Sent))
	s.pushedB.Add(pushed.Bytes)
	return pushed, err
}

// handOff deletes this node's copy of h when it is not among h's r
// closest (view) and every one of them holds h whole.
func (s *Service) handOff(h *held, view []peer.ID, holding map[peer.ID]bool, st *RoundStats) {
	if len(view) < s.r || slices.Contains(view, s.ep.ID()) || len(holding) < len(view) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blobs[h.key] != h {
		return
	}
	if _, err := s.deleteLocked(h, nil); err != nil {
		s.log.Error("blob hand-off", "blob", h.adm.Key, "err", err)
		return
	}
	s.mDeleted.WithLabelValues("handed").Inc()
	if st != nil {
		st.Handed++
	}
}
