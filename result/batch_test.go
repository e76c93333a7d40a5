package result

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/crypto/nacl/box"

	"github.com/up-pool/up/sigverify"
)

// batchFixture seals n results of one client to one project.
type batchFixture struct {
	client      ed25519.PrivateKey
	projectPub  *[32]byte
	projectPriv *[32]byte
}

func newBatchFixture(t testing.TB) *batchFixture {
	_, client, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &batchFixture{client: client, projectPub: pub, projectPriv: priv}
}

func (f *batchFixture) seal(t testing.TB, n int) []*Envelope {
	envs := make([]*Envelope, n)
	for i := range envs {
		in := Inner{Job: []byte(fmt.Sprintf("job-%02d", i)), Output: []byte(fmt.Sprintf("out %d", i)), At: 1}
		e, err := SealInner(in, f.client, f.projectPub[:], nil)
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = e
	}
	return envs
}

func (f *batchFixture) certKey([]byte) (ed25519.PublicKey, error) {
	return f.client.Public().(ed25519.PublicKey), nil
}

// TestOuterBatchVerifies: every envelope of a batch decodes from its
// encoding, passes VerifyOuter and opens, for several batch sizes; one
// envelope is signed alone and keeps the four-element layout.
func TestOuterBatchVerifies(t *testing.T) {
	f := newBatchFixture(t)
	for _, n := range []int{1, 2, 3, 5, 8, 32} {
		envs := f.seal(t, n)
		if err := SignOuterBatch(envs, f.client); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for i, e := range envs {
			if (n > 1) != (len(e.Path) > 0) {
				t.Fatalf("n=%d envelope %d: path of %d bytes", n, i, len(e.Path))
			}
			d, err := Decode(e.Encode())
			if err != nil {
				t.Fatalf("n=%d envelope %d: decode: %v", n, i, err)
			}
			if !bytes.Equal(d.Encode(), e.Encode()) {
				t.Fatalf("n=%d envelope %d: re-encoding differs", n, i)
			}
			if err := d.VerifyOuter(); err != nil {
				t.Fatalf("n=%d envelope %d: %v", n, i, err)
			}
			in, err := Open(d, f.projectPriv, f.certKey)
			if err != nil {
				t.Fatalf("n=%d envelope %d: open: %v", n, i, err)
			}
			if want := fmt.Sprintf("out %d", i); string(in.Output) != want {
				t.Fatalf("n=%d envelope %d: output %q, want %q", n, i, in.Output, want)
			}
		}
	}
	// Alone: the layout every envelope had before batches.
	e := f.seal(t, 1)[0]
	SignOuter(e, f.client)
	v1, err := Decode(e.Encode())
	if err != nil || v1.Path != nil {
		t.Fatalf("single envelope: %v, path %x", err, v1.Path)
	}
}

// TestOuterBatchRefuses: what a forwarding node or a forger can do with
// a batch's envelopes is refused: a path moved to another envelope, an
// altered sealed box, another batch's path, a single signature given a
// path, a path cut short; and a batch signature's cache (sigverify.Once)
// verifies the root once for all the envelopes (negative control: a
// verifier that accepts anything passes the forgeries).
func TestOuterBatchRefuses(t *testing.T) {
	f := newBatchFixture(t)
	envs := f.seal(t, 4)
	if err := SignOuterBatch(envs, f.client); err != nil {
		t.Fatal(err)
	}
	other := f.seal(t, 4)
	if err := SignOuterBatch(other, f.client); err != nil {
		t.Fatal(err)
	}
	single := f.seal(t, 1)[0]
	SignOuter(single, f.client)
	copyOf := func(e *Envelope) *Envelope { c := *e; return &c }

	moved := copyOf(envs[0])
	moved.Path = envs[1].Path
	altered := copyOf(envs[0])
	altered.Sealed = append([]byte(nil), altered.Sealed...)
	altered.Sealed[len(altered.Sealed)-1] ^= 1
	otherPath := copyOf(envs[0])
	otherPath.Path = other[0].Path
	singleWithPath := copyOf(single)
	singleWithPath.Path = envs[0].Path
	cut := copyOf(envs[0])
	cut.Path = cut.Path[:len(cut.Path)-1]
	pathless := copyOf(envs[0])
	pathless.Path = nil

	forged := map[string]*Envelope{
		"path of another envelope":     moved,
		"sealed box altered":           altered,
		"path of another batch":        otherPath,
		"single signature with a path": singleWithPath,
		"path cut short":               cut,
		"batch signature without path": pathless,
	}
	for name, e := range forged {
		if err := e.VerifyOuter(); !errors.Is(err, ErrForged) {
			t.Errorf("%s: %v, want ErrForged", name, err)
		}
		if _, err := Decode(e.Encode()); err == nil {
			if err := e.VerifyOuterWith(func(ed25519.PublicKey, []byte, []byte) bool { return true }); err != nil && name != "path cut short" {
				t.Errorf("control %s: a verifier accepting every signature refused it: %v", name, err)
			}
		}
	}

	// One verification of the root for the batch.
	calls := 0
	once := sigverify.NewOnce(64)
	counting := func(pub ed25519.PublicKey, msg, sig []byte) bool {
		calls++
		return once.Verify(pub, msg, sig)
	}
	for i, e := range envs {
		if err := e.VerifyOuterWith(counting); err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
	}
	msgs := map[string]bool{}
	for _, e := range envs {
		m, err := e.OuterMessage()
		if err != nil {
			t.Fatal(err)
		}
		msgs[string(m)] = true
	}
	if len(msgs) != 1 || calls != len(envs) {
		t.Fatalf("%d distinct root messages, %d verify calls; want 1 and %d", len(msgs), calls, len(envs))
	}
}

// TestOuterBatchOneClient: a batch signs only its own client's envelopes.
func TestOuterBatchOneClient(t *testing.T) {
	f, g := newBatchFixture(t), newBatchFixture(t)
	envs := append(f.seal(t, 2), g.seal(t, 1)...)
	if err := SignOuterBatch(envs, f.client); err == nil {
		t.Fatal("a batch with another client's envelope was signed")
	}
}

// FuzzDecode: Decode never panics, and what it accepts re-encodes to the
// same bytes (one encoding per envelope).
func FuzzDecode(f *testing.F) {
	fx := newBatchFixture(f)
	envs := fx.seal(f, 3)
	if err := SignOuterBatch(envs, fx.client); err != nil {
		f.Fatal(err)
	}
	single := fx.seal(f, 1)[0]
	SignOuter(single, fx.client)
	f.Add(envs[0].Encode())
	f.Add(single.Encode())
	f.Add([]byte{0x85, 0x40, 0x40, 0x40, 0x40, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(e.Encode(), b) {
			t.Fatalf("decoded %x re-encodes as %x", b, e.Encode())
		}
		_ = e.VerifyOuter()
	})
}
