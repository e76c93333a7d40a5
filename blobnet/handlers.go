package blobnet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// handleOffer serves /up/blob/offer/1.0.0: admit the blob (or find it
// held), answer the chunks this node lacks and, for a project's
// Replicate offer of a blob held whole, place it on its r closest.
func (s *Service) handleOffer(ctx context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var o wire.BlobOffer
	if err := wire.Decode(body, &o); err != nil {
		return nil, s.refuse(ReasonMalformed, wire.StatusBadRequest, "blob offer: %w", err)
	}
	if o.Replicate && from.Role() != certs.RoleProject {
		return nil, overlay.StatusErr(wire.StatusBadRequest, errors.New("blob offer: only a project's offer asks for placement"))
	}
	adm, der, err := s.admitOffer(from, &o, s.env.Now())
	if err != nil {
		return nil, err
	}
	h, err := s.accept(adm, &o, der)
	if err != nil {
		return nil, err
	}
	resp := &wire.BlobOfferResponse{Missing: s.missing(h)}
	if o.Replicate && len(resp.Missing) == 0 {
		resp.Holders, resp.Placing = s.placeAndWait(ctx, h)
	}
	return resp, nil
}

// accept stores an admitted blob, charged to its project's quota. A blob
// held already keeps its statement unless this one is later (created
// after it): the project's later word extends the blob's life, or
// withdraws it. A blob withdrawn here is refused with a statement no
// later than the withdrawal's.
func (s *Service) accept(adm *blob.Admitted, o *wire.BlobOffer, der []byte) (*held, error) {
	key := string(adm.Key.Bytes())
	now := s.nowMS()
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.blobs[key]; ok {
		if adm.Statement.Created <= h.created {
			return h, nil
		}
		if err := s.supersedeLocked(h, adm.Statement, o.Statement); err != nil {
			return nil, overlay.StatusErr(wire.StatusInternal, err)
		}
		return h, nil
	}
	if t, ok := s.gone[key]; ok && adm.Statement.Created <= t.created && now < t.until {
		return nil, s.refuse(ReasonWithdrawn, wire.StatusGone, "blob %s: withdrawn by project %q (its statement of %s is superseded)",
			adm.Key, adm.Statement.Project, time.UnixMilli(adm.Statement.Created).UTC().Format(time.RFC3339))
	}
	project, size := adm.Statement.Project, adm.Manifest.Size
	u := s.usage[project]
	if u.blobs+1 > s.cfg.MaxProjectBlobs || u.bytes+size > s.cfg.MaxProjectBytes {
		return nil, s.refuse(ReasonQuota, wire.StatusQuota,
			"blob %s of %d bytes: project %q is over its quota on this node: it holds %d blobs of %d bytes here (max %d blobs, %d bytes)",
			adm.Key, size, project, u.blobs, u.bytes, s.cfg.MaxProjectBlobs, s.cfg.MaxProjectBytes)
	}
	h := newHeld(adm, o.Statement, o.Manifest, now)
	_, known := s.certs[h.certRef]
	if err := s.storeBlob(h, der, !known); err != nil {
		return nil, overlay.StatusErr(wire.StatusInternal, err)
	}
	s.certs[h.certRef] = der
	s.addLocked(h)
	return h, nil
}

// missing lists the chunks of h this node lacks, as CID bytes, each once,
// in manifest order.
func (s *Service) missing(h *held) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for _, c := range h.chunks {
		if _, ok := s.chunks[c]; !ok {
			out = append(out, c.Bytes())
		}
	}
	return out
}

// handlePut serves /up/blob/put/1.0.0: store a chunk of a blob offered
// here once the blob's manifest lists it and its bytes hash to its CID.
func (s *Service) handlePut(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var p wire.ChunkPut
	if err := wire.Decode(body, &p); err != nil {
		return nil, s.refuse(ReasonMalformed, wire.StatusBadRequest, "chunk put: %w", err)
	}
	key, err := blob.ParseManifestCID(p.Blob)
	if err != nil {
		return nil, s.refuse(ReasonMalformed, wire.StatusBadRequest, "chunk put: %w", err)
	}
	c, err := blob.ParseChunkCID(p.Chunk)
	if err != nil {
		return nil, s.refuse(ReasonMalformed, wire.StatusBadRequest, "chunk put: %w", err)
	}
	s.mu.Lock()
	h := s.blobs[string(p.Blob)]
	s.mu.Unlock()
	switch {
	case h == nil:
		return nil, s.refuse(ReasonUnknownBlob, wire.StatusNotFound, "chunk %s of blob %s: the blob is not held here (offer it first)", c, key)
	case from.Role() == certs.RoleProject && from.Identity.Name != h.project:
		return nil, s.refuse(ReasonWrongProject, wire.StatusUnauthorized, "chunk %s: project %q may not send chunks of project %q's blob %s",
			c, from.Identity.Name, h.project, key)
	}
	if err := h.adm.CheckChunk(c, p.Data); err != nil {
		if errors.Is(err, blob.ErrNotListed) {
			return nil, s.refuse(ReasonUnlisted, wire.StatusBadRequest, "chunk put: %w", err)
		}
		return nil, s.refuse(ReasonBadChunk, wire.StatusBadRequest, "chunk put to blob %s: %w", key, err)
	}
	if err := s.putChunk(c, p.Data, string(from.Role())); err != nil {
		return nil, overlay.StatusErr(wire.StatusInternal, err)
	}
	s.mu.Lock()
	complete := h.missing == 0
	s.mu.Unlock()
	return &wire.ChunkPutResponse{Complete: complete}, nil
}

// putChunk stores a verified chunk unless it is stored already. The write
// runs outside the lock; a chunk whose every blob was deleted meanwhile
// is deleted again.
func (s *Service) putChunk(c cid.Cid, data []byte, source string) error {
	if s.HasChunk(c) {
		return nil
	}
	if err := s.storeChunk(c, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refs[c]) == 0 {
		b := s.st.NewBatch()
		deleteChunk(b, c)
		return b.Commit(true)
	}
	if _, ok := s.chunks[c]; !ok {
		s.haveLocked(c, len(data))
		s.mStored.WithLabelValues(source).Inc()
	}
	return nil
}

// handleManifestGet serves /up/blob/manifest/1.0.0 to any admitted
// party: a held blob's statement and manifest, unless it expired here.
func (s *Service) handleManifestGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var g wire.ManifestGet
	if err := wire.Decode(body, &g); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	now := s.nowMS()
	s.mu.Lock()
	h := s.blobs[string(g.Blob)]
	s.mu.Unlock()
	if h == nil || job.Expired(h.expires, now) {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("blob %x not held here", g.Blob))
	}
	return &wire.ManifestGetResponse{Statement: h.statement, Manifest: h.manifest}, nil
}

// handleChunkGet serves /up/blob/chunk/1.0.0 to any admitted party: the
// bytes stored for a chunk, as stored (the asker verifies them).
func (s *Service) handleChunkGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var g wire.ChunkGet
	if err := wire.Decode(body, &g); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	c, err := blob.ParseChunkCID(g.Chunk)
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	if !s.HasChunk(c) {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("chunk %s not held here", c))
	}
	data, err := s.readChunk(c)
	if errors.Is(err, store.ErrNotFound) {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("chunk %s not held here", c))
	}
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusInternal, err)
	}
	return &wire.ChunkGetResponse{Data: data}, nil
}
