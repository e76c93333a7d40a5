package blobnet

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/blob"
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
	outNS   = "blobout"   // blob key → the latest expiry of the statements its current one superseded (uvarint, Unix ms)
	goneNS  = "blobgone"  // blob key → tombstone: the withdrawing statement's creation and until when refused (two uvarints, Unix ms)
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
// held blob lists, in one batch, with tomb when not nil; it returns the
// bytes of chunks freed. s.mu is held.
func (s *Service) deleteLocked(h *held, tomb *tombstone) (int64, error) {
	b := s.st.NewBatch()
	b.Delete(store.Key(blobNS, []byte(h.key)))
	b.Delete(store.Key(outNS, []byte(h.key)))
	if tomb != nil {
		b.Put(store.Key(goneNS, []byte(h.key)), tomb.encode())
	}
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
	if tomb != nil {
		s.gone[h.key] = *tomb
	}
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
	_, err := s.deleteLocked(h, nil)
	return err
}

// tombstone is what a node keeps of a blob its project withdrew: a
// statement created at or before created is refused until until (Unix
// ms, this node's clock), so a node that missed the withdrawal cannot
// place the blob here again with its older statement.
type tombstone struct {
	created, until int64
}

func (t tombstone) encode() []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(t.created)), uint64(t.until))
}

func decodeTombstone(v []byte) (tombstone, error) {
	c, k := binary.Uvarint(v)
	u, k2 := binary.Uvarint(v[max(k, 0):])
	if k <= 0 || k2 <= 0 || k+k2 != len(v) {
		return tombstone{}, errors.New("bad tombstone")
	}
	return tombstone{created: int64(c), until: int64(u)}, nil
}

// supersedeLocked makes st (signed: statement) h's statement: a later
// one of its project for the same blob, which extends its life or, with
// a lifetime that ends now, withdraws it (deleted at the next expiry
// sweep). The latest expiry it supersedes is kept (outNS) for the
// tombstone. s.mu is held.
func (s *Service) supersedeLocked(h *held, st *blob.Statement, statement []byte) error {
	outlive := max(h.outlive, h.expires)
	v, err := codec.Marshal(&record{Statement: statement, Manifest: h.manifest, Offered: h.offered})
	if err != nil {
		return err
	}
	b := s.st.NewBatch()
	b.Put(store.Key(blobNS, []byte(h.key)), v)
	b.Put(store.Key(outNS, []byte(h.key)), binary.AppendUvarint(nil, uint64(max(outlive, 0))))
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("store blob %s's later statement: %w", h.adm.Key, err)
	}
	h.statement, h.created, h.expires, h.outlive = statement, st.Created, st.Expires(), outlive
	return nil
}
