package wire_test

import (
	"testing"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/wire"
)

// blobMsgs are valid blob-protocol messages used as fuzz seeds.
func blobMsgs() []wire.Validator {
	key := make([]byte, 36)
	return []wire.Validator{
		&wire.BlobOffer{Statement: []byte{1}, Manifest: []byte{2}},
		&wire.BlobOffer{Statement: []byte{1}, Manifest: []byte{2}, Cert: []byte{3}, Replicate: true},
		&wire.BlobOfferResponse{Missing: [][]byte{key, key}},
		&wire.BlobOfferResponse{Holders: 5, Placing: true},
		&wire.ChunkPut{Blob: key, Chunk: key, Data: []byte("chunk")},
		&wire.ChunkPutResponse{Complete: true},
		&wire.ManifestGet{Blob: key},
		&wire.ManifestGetResponse{Statement: []byte{1}, Manifest: []byte{2}},
		&wire.ChunkGet{Chunk: key},
		&wire.ChunkGetResponse{Data: []byte("chunk")},
	}
}

// fuzzBlobDecoder fuzzes one blob message's decoder, seeded with every
// blob message's encoding: never a panic; what decodes re-encodes and
// decodes the same.
func fuzzBlobDecoder(f *testing.F, proto wire.Validator) {
	for _, m := range blobMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, proto, b) })
}

func FuzzDecodeBlobOffer(f *testing.F)         { fuzzBlobDecoder(f, &wire.BlobOffer{}) }
func FuzzDecodeBlobOfferResponse(f *testing.F) { fuzzBlobDecoder(f, &wire.BlobOfferResponse{}) }
func FuzzDecodeChunkPut(f *testing.F)          { fuzzBlobDecoder(f, &wire.ChunkPut{}) }
func FuzzDecodeChunkPutResponse(f *testing.F)  { fuzzBlobDecoder(f, &wire.ChunkPutResponse{}) }
func FuzzDecodeManifestGet(f *testing.F)       { fuzzBlobDecoder(f, &wire.ManifestGet{}) }
func FuzzDecodeManifestGetResponse(f *testing.F) {
	fuzzBlobDecoder(f, &wire.ManifestGetResponse{})
}
func FuzzDecodeChunkGet(f *testing.F)         { fuzzBlobDecoder(f, &wire.ChunkGet{}) }
func FuzzDecodeChunkGetResponse(f *testing.F) { fuzzBlobDecoder(f, &wire.ChunkGetResponse{}) }

// TestBlobMessageBounds: every blob message takes what is at its bounds
// and refuses what is over them (or missing).
func TestBlobMessageBounds(t *testing.T) {
	key := make([]byte, 36)
	long := make([]byte, wire.MaxBlobKeyLen+1)
	keys := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = key
		}
		return out
	}
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"offer at bounds", &wire.BlobOffer{Statement: make([]byte, blob.MaxStatementSize), Manifest: make([]byte, blob.MaxManifestSize), Cert: make([]byte, wire.MaxCertBytes)}, true},
		{"offer without certificate", &wire.BlobOffer{Statement: []byte{1}, Manifest: []byte{1}}, true},
		{"offer statement over", &wire.BlobOffer{Statement: make([]byte, blob.MaxStatementSize+1), Manifest: []byte{1}}, false},
		{"offer manifest over", &wire.BlobOffer{Statement: []byte{1}, Manifest: make([]byte, blob.MaxManifestSize+1)}, false},
		{"offer certificate over", &wire.BlobOffer{Statement: []byte{1}, Manifest: []byte{1}, Cert: make([]byte, wire.MaxCertBytes+1)}, false},
		{"offer without statement", &wire.BlobOffer{Manifest: []byte{1}}, false},
		{"offer without manifest", &wire.BlobOffer{Statement: []byte{1}}, false},
		{"missing at bound", &wire.BlobOfferResponse{Missing: keys(blob.MaxChunks)}, true},
		{"missing over", &wire.BlobOfferResponse{Missing: keys(blob.MaxChunks + 1)}, false},
		{"missing key too long", &wire.BlobOfferResponse{Missing: [][]byte{long}}, false},
		{"missing key empty", &wire.BlobOfferResponse{Missing: [][]byte{{}}}, false},
		{"put at bound", &wire.ChunkPut{Blob: key, Chunk: key, Data: make([]byte, blob.ChunkSize)}, true},
		{"put over", &wire.ChunkPut{Blob: key, Chunk: key, Data: make([]byte, blob.ChunkSize+1)}, false},
		{"put without blob", &wire.ChunkPut{Chunk: key, Data: []byte{1}}, false},
		{"put chunk key too long", &wire.ChunkPut{Blob: key, Chunk: long, Data: []byte{1}}, false},
		{"manifest get", &wire.ManifestGet{Blob: key}, true},
		{"manifest get without key", &wire.ManifestGet{}, false},
		{"manifest at bounds", &wire.ManifestGetResponse{Statement: make([]byte, blob.MaxStatementSize), Manifest: make([]byte, blob.MaxManifestSize)}, true},
		{"manifest over", &wire.ManifestGetResponse{Statement: []byte{1}, Manifest: make([]byte, blob.MaxManifestSize+1)}, false},
		{"manifest statement over", &wire.ManifestGetResponse{Statement: make([]byte, blob.MaxStatementSize+1), Manifest: []byte{1}}, false},
		{"manifest empty", &wire.ManifestGetResponse{}, false},
		{"chunk get", &wire.ChunkGet{Chunk: key}, true},
		{"chunk get key too long", &wire.ChunkGet{Chunk: long}, false},
		{"chunk at bound", &wire.ChunkGetResponse{Data: make([]byte, blob.ChunkSize)}, true},
		{"chunk over", &wire.ChunkGetResponse{Data: make([]byte, blob.ChunkSize+1)}, false},
	} {
		err := c.msg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	// Every bound message at its bound fits the frame its protocol reads.
	for _, c := range []struct {
		name  string
		msg   any
		frame int
	}{
		{"offer", &wire.BlobOffer{Statement: make([]byte, blob.MaxStatementSize), Manifest: make([]byte, blob.MaxManifestSize), Cert: make([]byte, wire.MaxCertBytes), Replicate: true}, wire.MaxBlobOfferFrame},
		{"offer response", &wire.BlobOfferResponse{Missing: keys(blob.MaxChunks), Holders: 65535, Placing: true}, wire.MaxBlobOfferReply},
		{"put", &wire.ChunkPut{Blob: make([]byte, wire.MaxBlobKeyLen), Chunk: make([]byte, wire.MaxBlobKeyLen), Data: make([]byte, blob.ChunkSize)}, wire.MaxChunkFrame},
		{"chunk", &wire.ChunkGetResponse{Data: make([]byte, blob.ChunkSize)}, wire.MaxChunkFrame},
		{"manifest", &wire.ManifestGetResponse{Statement: make([]byte, blob.MaxStatementSize), Manifest: make([]byte, blob.MaxManifestSize)}, wire.MaxManifestReply},
		{"chunk get", &wire.ChunkGet{Chunk: make([]byte, wire.MaxBlobKeyLen)}, wire.MaxBlobGetFrame},
	} {
		b, err := wire.Marshal(c.msg)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > c.frame {
			t.Errorf("%s at its bounds encodes to %d bytes, over its frame of %d", c.name, len(b), c.frame)
		}
	}
}
