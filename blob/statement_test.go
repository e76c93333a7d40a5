package blob

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
)

func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

// testStatement is a valid statement naming m.
func testStatement(m *Manifest) *Statement {
	return &Statement{
		Version:  StatementVersion,
		Project:  m.Project,
		Manifest: m.Key(),
		CertRef:  job.CertRef([]byte("project certificate DER")),
		Created:  1_760_000_000_000,
		Lifetime: 14 * 24 * 3600 * 1000,
	}
}

func mustSignStatement(t testing.TB, s *Statement, key ed25519.PrivateKey) *SignedStatement {
	t.Helper()
	signed, err := SignStatement(s, key)
	if err != nil {
		t.Fatalf("SignStatement: %v", err)
	}
	return signed
}

// rawStatement encodes s and signs it without SignStatement's checks, as a
// forger or a buggy project would.
func rawStatement(t testing.TB, s *Statement, key ed25519.PrivateKey) []byte {
	t.Helper()
	b, err := codec.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return (&SignedStatement{Statement: b, Sig: ed25519.Sign(key, statementPayload(b))}).Encode()
}

var statementCases = []struct {
	name   string
	mutate func(*Statement)
	ok     bool
}{
	{"base", func(*Statement) {}, true},
	{"version 0", func(s *Statement) { s.Version = 0 }, false},
	{"version 2", func(s *Statement) { s.Version = StatementVersion + 1 }, false},
	{"project empty", func(s *Statement) { s.Project = "" }, false},
	{"project max", func(s *Statement) { s.Project = strings.Repeat("p", job.MaxNameLen) }, true},
	{"project max+1", func(s *Statement) { s.Project = strings.Repeat("p", job.MaxNameLen+1) }, false},
	{"project bad utf-8", func(s *Statement) { s.Project = "\xc3" }, false},
	{"manifest nil", func(s *Statement) { s.Manifest = nil }, false},
	{"manifest a chunk CID", func(s *Statement) { s.Manifest = ChunkCID([]byte("x")).Bytes() }, false},
	{"manifest truncated", func(s *Statement) { s.Manifest = s.Manifest[:len(s.Manifest)-1] }, false},
	{"cert ref 31", func(s *Statement) { s.CertRef = s.CertRef[:31] }, false},
	{"cert ref 33", func(s *Statement) { s.CertRef = append(s.CertRef, 0) }, false},
	{"created 0", func(s *Statement) { s.Created = 0 }, false},
	{"created 1", func(s *Statement) { s.Created = 1 }, true},
	{"created max", func(s *Statement) { s.Created = 1<<63 - 1 }, true},
	{"lifetime 0", func(s *Statement) { s.Lifetime = 0 }, false},
	{"lifetime 1", func(s *Statement) { s.Lifetime = 1 }, true},
	{"lifetime max", func(s *Statement) { s.Lifetime = job.MaxLifetimeMS }, true},
	{"lifetime max+1", func(s *Statement) { s.Lifetime = job.MaxLifetimeMS + 1 }, false},
	{"lifetime negative", func(s *Statement) { s.Lifetime = -1 }, false},
}

func TestStatementBounds(t *testing.T) {
	m, _ := mustSplit(t, testData(1, 100))
	key := testKey(1)
	for _, tc := range statementCases {
		t.Run(tc.name, func(t *testing.T) {
			s := testStatement(m)
			tc.mutate(s)
			signed, err := SignStatement(s, key)
			if (err == nil) != tc.ok {
				t.Fatalf("SignStatement = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("SignStatement = %v, does not wrap codec.ErrMalformed", err)
			}
			_, got, err := DecodeStatement(rawStatement(t, s, key))
			if !tc.ok {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("DecodeStatement = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeStatement: %v", err)
			}
			if got.Expires() < got.Created {
				t.Fatalf("Expires %d before Created %d", got.Expires(), got.Created)
			}
			if n := len(signed.Encode()); n > MaxStatementSize/2 {
				t.Fatalf("signed statement of %d bytes, far nearer MaxStatementSize than the bound's argument says", n)
			}
		})
	}
}

func TestStatementExpires(t *testing.T) {
	m, _ := mustSplit(t, nil)
	s := testStatement(m)
	if s.Expires() != s.Created+s.Lifetime {
		t.Fatalf("Expires = %d", s.Expires())
	}
	if job.Expired(s.Expires(), s.Expires()) || !job.Expired(s.Expires(), job.KeepUntil(s.Expires())) {
		t.Fatal("statement expiry does not follow job.Expired")
	}
	s.Created = 1<<63 - 10
	if s.Expires() != 1<<63-1 {
		t.Fatalf("Expires does not saturate: %d", s.Expires())
	}
}

func TestAdmit(t *testing.T) {
	m, chunks := mustSplit(t, testData(2, 2*ChunkSize+7))
	key := testKey(1)
	signed := mustSignStatement(t, testStatement(m), key)
	a, err := Admit(signed.Encode(), m.Encode(), key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if a.Key != m.CID() || a.Manifest.CID() != m.CID() || a.Statement.Project != "lhc" {
		t.Fatalf("Admitted = %+v", a)
	}
	cids, _ := m.ChunkCIDs()
	for i, c := range cids {
		if !a.Lists(c) {
			t.Fatalf("chunk %d not listed", i)
		}
		if err := a.CheckChunk(c, chunks[i]); err != nil {
			t.Fatalf("CheckChunk %d: %v", i, err)
		}
	}
	stranger := ChunkCID([]byte("not in the blob"))
	if a.Lists(stranger) {
		t.Fatal("a chunk of no manifest is listed")
	}
	if err := a.CheckChunk(stranger, []byte("not in the blob")); !errors.Is(err, ErrNotListed) {
		t.Fatalf("CheckChunk of an unlisted chunk = %v, want ErrNotListed", err)
	}
	bad := bytes.Clone(chunks[0])
	bad[0] ^= 1
	if err := a.CheckChunk(cids[0], bad); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("CheckChunk of altered bytes = %v, want ErrBadChunk", err)
	}
}

// TestAdmitRefuses holds the negative controls: another key, an altered
// statement, an altered or substituted manifest, another project's
// manifest.
func TestAdmitRefuses(t *testing.T) {
	m, _ := mustSplit(t, testData(3, ChunkSize+1))
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	good := mustSignStatement(t, testStatement(m), key).Encode()

	if _, err := Admit(good, m.Encode(), testKey(2).Public().(ed25519.PublicKey)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("statement checked with another key: %v, want ErrBadSignature", err)
	}
	other := mustSignStatement(t, testStatement(m), testKey(2)).Encode()
	if _, err := Admit(other, m.Encode(), pub); !errors.Is(err, ErrBadSignature) {
		t.Errorf("statement signed by another key: %v, want ErrBadSignature", err)
	}
	if _, err := Admit(good, m.Encode(), pub[:31]); !errors.Is(err, ErrBadSignature) {
		t.Errorf("short public key: %v, want ErrBadSignature", err)
	}

	// The statement's bytes altered after signing: a longer lifetime.
	signed, s, err := DecodeStatement(good)
	if err != nil {
		t.Fatal(err)
	}
	s.Lifetime++
	signed.Statement, _ = codec.Marshal(s)
	if _, err := Admit(signed.Encode(), m.Encode(), pub); !errors.Is(err, ErrBadSignature) {
		t.Errorf("altered statement: %v, want ErrBadSignature", err)
	}

	// The manifest altered: another chunk, another size, another kind.
	altered, _ := mustSplit(t, testData(3, ChunkSize+1))
	altered.Chunks[1] = ChunkCID([]byte{0}).Bytes()
	resized, _ := mustSplit(t, testData(3, ChunkSize+2))
	rekinded, _ := mustSplit(t, testData(3, ChunkSize+1))
	rekinded.Kind = KindWasm
	for name, bad := range map[string]*Manifest{"chunk": altered, "size": resized, "kind": rekinded} {
		if _, err := Admit(good, bad.Encode(), pub); !errors.Is(err, ErrWrongManifest) {
			t.Errorf("altered manifest (%s): %v, want ErrWrongManifest", name, err)
		}
	}

	// A statement of project "lhc" naming a manifest of project "other",
	// signed by lhc's key: lhc must not charge its blobs to another.
	theirs, _, err := Split("other", KindInput, []byte("data"))
	if err != nil {
		t.Fatal(err)
	}
	st := testStatement(theirs)
	st.Project = "lhc"
	cross := mustSignStatement(t, st, key).Encode()
	if _, err := Admit(cross, theirs.Encode(), pub); !errors.Is(err, ErrWrongManifest) {
		t.Errorf("statement naming another project's manifest: %v, want ErrWrongManifest", err)
	}

	if _, err := Admit(good[:len(good)-1], m.Encode(), pub); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated statement: %v, want ErrMalformed", err)
	}
	if _, err := Admit(good, append(m.Encode(), 0), pub); !errors.Is(err, ErrMalformed) {
		t.Errorf("manifest with a trailing byte: %v, want ErrMalformed", err)
	}
}

func TestDecodeStatementRefusesNonCanonical(t *testing.T) {
	m, _ := mustSplit(t, nil)
	b := mustSignStatement(t, testStatement(m), testKey(1)).Encode()
	signed, _, err := DecodeStatement(b)
	if err != nil {
		t.Fatal(err)
	}
	short := *signed
	short.Sig = short.Sig[:63]
	cases := map[string][]byte{
		"trailing byte":    append(bytes.Clone(b), 0),
		"truncated":        b[:len(b)-1],
		"indefinite array": append(append([]byte{0x9f}, b[1:]...), 0xff),
		"short signature":  short.Encode(),
		"null":             {0xf6},
		"empty":            nil,
		"oversized":        make([]byte, MaxStatementSize+1),
	}
	// The inner statement with a non-canonical (16-bit) version head.
	wide := *signed
	wide.Statement = append([]byte{signed.Statement[0], 0x19, 0x00, 0x01}, signed.Statement[2:]...)
	cases["wide inner version"] = wide.Encode()
	for name, bad := range cases {
		if _, _, err := DecodeStatement(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeStatement = %v, want ErrMalformed", name, err)
		}
	}
}
