package creditnet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// verified is a receipt that passed credit.Verify, with its encoding.
type verified struct {
	r   *credit.Receipt
	enc []byte
}

// handlePut verifies every receipt of a put, then stores those newer
// than what is kept. One receipt that fails refuses the put whole.
func (s *Service) handlePut(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.CreditPut
	if err := wire.Decode(body, &req); err != nil {
		return nil, s.refuse(from, ReasonMalformed, wire.StatusBadRequest, fmt.Errorf("credit put: %w", err))
	}
	now := s.env.Now()
	v := s.ep.Admission().Verifier()
	rs := make([]verified, 0, len(req.Receipts))
	for i, b := range req.Receipts {
		r, err := credit.Verify(b, v, now)
		if err != nil {
			reason, status := reasonOf(err)
			return nil, s.refuse(from, reason, status, fmt.Errorf("credit put: receipt %d of %d: %w", i+1, len(req.Receipts), err))
		}
		rs = append(rs, verified{r: r, enc: b})
	}
	stored, had, err := s.keep(rs)
	if errors.Is(err, ErrFull) {
		return nil, s.refuse(from, ReasonFull, wire.StatusQuota, err)
	}
	if err != nil {
		return nil, err
	}
	return &wire.CreditPutResponse{Stored: uint16(stored), Had: uint16(had)}, nil
}

// ErrFull reports a put over MaxClients or MaxProjectsPerClient.
var ErrFull = errors.New("credit store full")

// keep keeps verified receipts (the caller verified them): per client
// and project the KeepPerProject newest by sequence number. It returns
// how many were new and how many were held already or older than those
// kept; each changed client and project is written in one synced batch.
func (s *Service) keep(rs []verified) (stored, had int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type changedKey struct{ client, project string }
	changed := map[changedKey]bool{}
	for _, v := range rs {
		a := s.accounts[string(v.r.Client)]
		switch {
		case a == nil && len(s.accounts) >= s.cfg.MaxClients:
			return stored, had, fmt.Errorf("%w: this node holds receipts of %d clients, its most", ErrFull, s.cfg.MaxClients)
		case a != nil && a.projects[v.r.Project] == nil && len(a.projects) >= s.cfg.MaxProjectsPerClient:
			return stored, had, fmt.Errorf("%w: this node holds receipts of %d projects for the client, its most", ErrFull, s.cfg.MaxProjectsPerClient)
		}
		a = s.accountLocked(v.r.Client)
		ks, ok := insert(a.projects[v.r.Project], kept{seq: v.r.Seq, enc: v.enc}, s.cfg.KeepPerProject)
		if !ok {
			had++
			continue
		}
		a.projects[v.r.Project] = ks
		s.creditQuotaLocked(string(v.r.Client), len(v.r.Entries))
		clear(a.pushed)
		a.version++
		changed[changedKey{string(v.r.Client), v.r.Project}] = true
		stored++
	}
	if len(changed) == 0 {
		return stored, had, nil
	}
	b := s.st.NewBatch()
	for k := range changed {
		ks := s.accounts[k.client].projects[k.project]
		encs := make([][]byte, len(ks))
		for i, kp := range ks {
			encs[i] = kp.enc
		}
		val, err := codec.Marshal(encs)
		if err != nil {
			return 0, 0, err
		}
		b.Put(accountKey([]byte(k.client), k.project), val)
	}
	if err := b.Commit(true); err != nil {
		return 0, 0, fmt.Errorf("creditnet: store %d receipts: %w", stored, err)
	}
	s.mStored.Add(float64(stored))
	return stored, had, nil
}

// insert adds k to ks (oldest first) unless a receipt of its number is
// kept or it is older than the keep newest; it reports whether it did.
func insert(ks []kept, k kept, keep int) ([]kept, bool) {
	i, found := slices.BinarySearchFunc(ks, k.seq, func(x kept, seq uint64) int { return cmp.Compare(x.seq, seq) })
	if found || (len(ks) >= keep && i == 0) {
		return ks, false
	}
	ks = slices.Insert(slices.Clone(ks), i, k)
	if len(ks) > keep {
		ks = ks[len(ks)-keep:]
	}
	return ks, true
}

// handleGet answers the receipts held for a client.
func (s *Service) handleGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.CreditGet
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("credit get: %w", err))
	}
	return &wire.CreditGetResponse{Receipts: s.Receipts(req.Client, wire.MaxCreditGetReply-1<<10, wire.MaxCreditGetCount)}, nil
}
