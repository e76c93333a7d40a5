// Package sigverify owns the verification of Ed25519 signatures: the
// standard library's acceptance rules (crypto/ed25519: cofactorless,
// small-order and non-canonical public keys allowed), computed by
// curve25519-voi with each public key's expanded form (its decompressed
// point and tables) cached, so a key seen again — a project's, a node's,
// a client's: a few keys sign almost every object a node checks — costs
// about a third of a standard-library verification.
package sigverify

import (
	"crypto/ed25519"
	"crypto/sha256"
	"sync"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// maxKeys bounds the cached expanded keys (1.5–3 kB each: ~6 MB at
// most); past it the cache starts again empty.
const maxKeys = 2048

// stdLib are the verification options of crypto/ed25519's Verify.
var stdLib = &voi.Options{Verify: voi.VerifyOptionsStdLib}

var (
	mu   sync.RWMutex
	keys = make(map[[ed25519.PublicKeySize]byte]*voi.ExpandedPublicKey)
)

// Verify reports whether sig is pub's Ed25519 signature of msg, exactly
// as crypto/ed25519.Verify does, except that a public key or signature
// of the wrong length is false, not a panic.
func Verify(pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	ek := Expanded(pub)
	if ek == nil {
		// Not a point voi decompresses: the standard library's answer.
		return ed25519.Verify(pub, msg, sig)
	}
	return voi.VerifyExpandedWithOptions(ek, msg, sig, stdLib)
}

// Expanded is pub's expanded form (voi's decompressed point and tables,
// for its single and batch verifiers), from the cache or computed and
// cached; nil when pub is not a 32-byte curve point.
func Expanded(pub ed25519.PublicKey) *voi.ExpandedPublicKey {
	if len(pub) != ed25519.PublicKeySize {
		return nil
	}
	k := [ed25519.PublicKeySize]byte(pub)
	mu.RLock()
	ek, ok := keys[k]
	mu.RUnlock()
	if ok {
		return ek
	}
	ek, err := voi.NewExpandedPublicKey(voi.PublicKey(pub))
	if err != nil {
		return nil
	}
	mu.Lock()
	if len(keys) >= maxKeys {
		clear(keys)
	}
	keys[k] = ek
	mu.Unlock()
	return ek
}

// Once verifies signatures remembering the valid ones: a (key, message,
// signature) verified here before is valid without a second
// verification — a batch's root signature comes with every object of
// the batch. Each party keeps its own (one per node: a verdict is never
// shared between parties). Bounded: it starts afresh when full. Safe for
// concurrent use; a nil *Once verifies every time.
type Once struct {
	mu   sync.Mutex
	max  int
	seen map[[sha256.Size]byte]struct{}
}

// NewOnce returns a Once remembering at most max valid signatures.
func NewOnce(max int) *Once {
	return &Once{max: max, seen: make(map[[sha256.Size]byte]struct{})}
}

// Verify is the package's Verify, remembering a valid signature.
func (o *Once) Verify(pub ed25519.PublicKey, msg, sig []byte) bool {
	if o == nil {
		return Verify(pub, msg, sig)
	}
	d := onceDigest(pub, msg, sig)
	if o.known(d) {
		return true
	}
	if !Verify(pub, msg, sig) {
		return false
	}
	o.remember(d)
	return true
}

// Known reports whether the signature was verified valid here before
// (Verify or Remember): a batch verifier leaves it out.
func (o *Once) Known(pub ed25519.PublicKey, msg, sig []byte) bool {
	return o != nil && o.known(onceDigest(pub, msg, sig))
}

// Remember records a signature the caller verified valid (in a batch).
// Known then answers with the caller's verdict: keep one Once to one kind
// of verifier (a batch verifier's cofactored check is not the strict
// single one).
func (o *Once) Remember(pub ed25519.PublicKey, msg, sig []byte) {
	if o != nil {
		o.remember(onceDigest(pub, msg, sig))
	}
}

// onceDigest names (pub, msg, sig): key and signature are of fixed sizes
// in a valid signature, and one that is not never verifies.
func onceDigest(pub ed25519.PublicKey, msg, sig []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(pub)
	h.Write(sig)
	h.Write(msg)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

func (o *Once) known(d [sha256.Size]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.seen[d]
	return ok
}

func (o *Once) remember(d [sha256.Size]byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) >= o.max {
		clear(o.seen)
	}
	o.seen[d] = struct{}{}
}

// VerifyMany checks that each sigs[i] is pubs[i]'s Ed25519 signature of
// msgs[i] and returns the index of the first that is not, -1 when all
// are. Two or more are verified together (curve25519-voi's batch
// verifier: about half the CPU of one by one; cofactored, as RFC 8032
// allows, so an honest signature passes either way); when the batch
// fails, one by one (Verify) to name the first bad one.
func VerifyMany(pubs []ed25519.PublicKey, msgs, sigs [][]byte) int {
	n := len(pubs)
	if n != len(msgs) || n != len(sigs) {
		panic("sigverify: VerifyMany of unequal lists")
	}
	if n > 1 && batchValid(pubs, msgs, sigs) {
		return -1
	}
	for i := range pubs {
		if !Verify(pubs[i], msgs[i], sigs[i]) {
			return i
		}
	}
	return -1
}

// batchValid verifies the signatures as one batch; false when any key is
// not a curve point, any length is wrong, or the batch fails.
func batchValid(pubs []ed25519.PublicKey, msgs, sigs [][]byte) bool {
	v := voi.NewBatchVerifierWithCapacity(len(pubs))
	for i, pub := range pubs {
		ek := Expanded(pub)
		if ek == nil || len(sigs[i]) != ed25519.SignatureSize {
			return false
		}
		v.AddExpanded(ek, msgs[i], sigs[i])
	}
	ok, _ := v.Verify(nil) // nil: crypto/rand picks the batch's coefficients
	return ok
}
