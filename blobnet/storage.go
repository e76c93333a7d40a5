package blobnet

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/store"
)

// Store key namespaces. A chunk's bytes and its index entry are written
// and deleted together; the index (a few bytes a chunk) is what a
// restarted node scans, not the chunks.
const (
	blobNS  = "blob"      // blob key → record
	chunkNS = "blobchunk" // chunk CID → its bytes
	haveNS  = "blobhave"  // chunk CID → its length (uvarint)
	certNS  = "blobcert"  // CertRef → the project certificate's DER
)

// record is a held blob as persisted.
type record struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte   // blob.SignedStatement, encoded
	Manifest  []byte   // blob.Manifest, encoded
	Offered   int64    // when this node accepted the offer, Unix ms on its clock
}

func decodeRecord(v []byte) (*record, error) {
	var rec record
	if err := codec.Unmarshal(v, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func encodeLen(n int) []byte { return binary.AppendUvarint(nil, uint64(n)) }

func decodeLen(v []byte) (int, error) {
	n, k := binary.Uvarint(v)
	if k != len(v) || n > 1<<30 {
		return 0, errors.New("bad chunk length")
	}
	return int(n), nil
}

// storeBlob persists a newly accepted blob and, when new, its project's
// certificate, in one synced batch.
func (s *Service) storeBlob(h *held, der []byte, newCert bool) error {
	v, err := codec.Marshal(&record{Statement: h.statement, Manifest: h.manifest, Offered: h.offered})
	if err != nil {
		return err
	}
	b := s.st.NewBatch()
	b.Put(store.Key(blobNS, []byte(h.key)), v)
	if newCert {
		b.Put(store.Key(certNS, []byte(h.certRef)), der)
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("store blob %s: %w", h.adm.Key, err)
	}
	return nil
}

// storeChunk persists a verified chunk and its index entry.
func (s *Service) storeChunk(c cid.Cid, data []byte) error {
	b := s.st.NewBatch()
	b.Put(store.Key(chunkNS, c.Bytes()), data)
	b.Put(store.Key(haveNS, c.Bytes()), encodeLen(len(data)))
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("store chunk %s: %w", c, err)
	}
	return nil
}

// readChunk returns the stored bytes of chunk c, unverified.
func (s *Service) readChunk(c cid.Cid) ([]byte, error) {
	v, err := s.st.Get(store.Key(chunkNS, c.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", c, err)
	}
	return v, nil
}

func deleteChunk(b *store.Batch, c cid.Cid) {
	b.Delete(store.Key(chunkNS, c.Bytes()))
	b.Delete(store.Key(haveNS, c.Bytes()))
}

// deleteLocked deletes a held blob: its record, and the chunks no other
// held blob lists, in one batch; it returns the bytes of chunks freed.
// s.mu is held.
func (s *Service) deleteLocked(h *held) (int64, error) {
	b := s.st.NewBatch()
	b.Delete(store.Key(blobNS, []byte(h.key)))
	var freed int64
	var gone []cid.Cid
	for _, c := range h.chunks {
		if len(s.refs[c]) > 1 {
			continue
		}
		if n, ok := s.chunks[c]; ok {
			deleteChunk(b, c)
			freed += int64(n)
			gone = append(gone, c)
		}
	}
	if err := b.Commit(true); err != nil {
		return 0, fmt.Errorf("delete blob %s: %w", h.adm.Key, err)
	}
	for _, c := range h.chunks {
		delete(s.refs[c], h.key)
		if len(s.refs[c]) == 0 {
			delete(s.refs, c)
		}
	}
	for _, c := range gone {
		delete(s.chunks, c)
	}
	delete(s.blobs, h.key)
	u := s.usage[h.project]
	u.bytes -= h.size
	u.blobs--
	if u.blobs <= 0 {
		delete(s.usage, h.project)
	} else {
		s.usage[h.project] = u
	}
	return freed, nil
}

// Delete deletes a held blob and the chunks no other held blob lists.
func (s *Service) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.blobs[string(key)]
	if !ok {
		return store.ErrNotFound
	}
	_, err := s.deleteLocked(h)
	return err
}
