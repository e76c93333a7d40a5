package job

import (
	"bytes"
	"testing"
)

// TestSpecV5RoundTrip: a spec asking for commit–reveal takes the
// 18-element layout and decodes to the same spec; a version 4 spec keeps
// its 16-element bytes; copies of a unit name one board, other units
// another.
func TestSpecV5RoundTrip(t *testing.T) {
	key := testKey(5)
	s := testSpecV4()
	if s.LeastVersion() != specVersion4 {
		t.Fatalf("LeastVersion without commit = %d", s.LeastVersion())
	}
	if b := mustSign(t, s, key).Spec; b[0] != specV4Header {
		t.Fatalf("version 4 spec starts with %#x", b[0])
	}
	s.Commit, s.RevealWait = 2, 60_000
	s.Version = s.LeastVersion()
	if s.Version != specVersion5 {
		t.Fatalf("LeastVersion with commit = %d", s.Version)
	}
	signed := mustSign(t, s, key)
	if signed.Spec[0] != specV5Header {
		t.Fatalf("spec starts with %#x, want the 18-element array %#x", signed.Spec[0], specV5Header)
	}
	_, got, err := Decode(signed.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit != 2 || got.RevealWaitMS() != 60_000 || got.Stdin != s.Stdin {
		t.Fatalf("decoded commit %d wait %d stdin %d", got.Commit, got.RevealWait, got.Stdin)
	}
	other := *s
	other.Nonce = bytes.Repeat([]byte{9}, NonceLen)
	if !bytes.Equal(other.BoardKey(), s.BoardKey()) {
		t.Fatal("two copies of a unit name different boards")
	}
	other.Args = append([]string{"x"}, other.Args...)
	if bytes.Equal(other.BoardKey(), s.BoardKey()) {
		t.Fatal("two units name one board")
	}
	old := *s
	old.Version = specVersion4
	if err := old.Validate(); err == nil {
		t.Fatal("a version 4 spec with commit–reveal validated")
	}
	s.Commit = MaxCommit + 1
	if err := s.Validate(); err == nil {
		t.Fatal("commit above MaxCommit validated")
	}
}
