package project

import (
	"crypto/cipher"
	"crypto/ed25519"
	"fmt"
	"sync"
	"time"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	"github.com/oasisprotocol/curve25519-voi/primitives/x25519"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"
	"golang.org/x/crypto/salsa20/salsa"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/sigverify"
)

// Opening a result checks what result.Open checks, in the same order of
// refusal, for a fraction of its CPU (it is most of what a harvest costs
// the project):
//
//   - a result sealed under a client's session (result.Session) costs
//     no public-key operation after the session's first: its note is
//     verified and its cipher derived once, then cached;
//   - the project's X25519 public key is computed once, not per result;
//   - the box is opened with curve25519-voi's X25519 (the same function,
//     about 40 % faster than x/crypto's here) and x/crypto's HSalsa20 and
//     secretbox, as nacl/box.OpenAnonymous does;
//   - the outer and inner Ed25519 signatures of all the results one
//     harvest fetches in a round are verified together with
//     curve25519-voi's batch verifier (one multi-scalar multiplication),
//     with each client's public key expanded once. Batch verification is
//     cofactored (as RFC 8032 allows) and refuses small-order and
//     non-canonical keys and R; a client's honest signature passes either
//     way, and only the client can make a signature that passes one rule
//     and not the other. A batch that fails is checked one by one, so a
//     bad copy is refused alone.
//
// innerDomain and outerDomain are the result package's (its signature
// payloads are unexported); TestOpenAgreesWithResultOpen pins them.
const (
	innerDomain = "up/result-inner/v1\x00"
	outerDomain = "up/result/v1\x00"
)

// unsealed is a result whose box opened and whose certificate verified,
// its two signatures still to check.
type unsealed struct {
	in     *result.Inner
	client string // the certificate's name
	key    []byte // the client's public key
	pub    *voi.ExpandedPublicKey
	outer  []byte // outer signature payload
	outSig []byte
	inner  []byte // inner signature payload (nil for a session's record: none)
}

// opener opens results for a project: its result keys, its cache of
// client keys and how it checks a client's certificate (name and key).
type opener struct {
	keys  *openKeys
	cache *keyCaches
	cert  func(der []byte) (name string, pub ed25519.PublicKey, err error)
}

// opener returns the project's result opener, checking certificates
// against the CA at the time of each check.
func (p *Project) opener() *opener {
	return &opener{keys: p.openKeys(), cache: &p.keyCaches, cert: func(der []byte) (string, ed25519.PublicKey, error) {
		id, err := p.a.Endpoint().Admission().Verifier().VerifyCert(der, p.a.Now(), certs.RoleClient)
		if err != nil {
			return "", nil, err
		}
		return id.Name, id.PublicKey, nil
	}}
}

// unseal decodes a result envelope for the job of key, opens its box and
// verifies the client's certificate, and returns the signatures to check
// (verifySigs).
func (o *opener) unseal(b, key []byte) (*unsealed, error) {
	env, err := result.Decode(b)
	if err != nil {
		return nil, err
	}
	if string(env.Job) != string(key) {
		return nil, fmt.Errorf("%w: result names another job", result.ErrForged)
	}
	pub, err := o.cache.clientKey(env.Client)
	if err != nil {
		// result.Open refuses it at its outer signature.
		return nil, fmt.Errorf("%w: outer signature", result.ErrForged)
	}
	outer, err := env.OuterMessage()
	if err != nil {
		return nil, err
	}
	plain, session, ok := o.openSealed(env, pub)
	if !ok {
		// result.Open checks the outer signature first: a box altered
		// under a valid signature is refused for the box; one whose
		// signature fails too, for the signature.
		return nil, refuse(pub, outer, env.Sig, fmt.Errorf("%w: sealed box does not open", result.ErrForged))
	}
	var in result.Inner
	if err := codec.Unmarshal(plain, &in); err != nil {
		return nil, refuse(pub, outer, env.Sig, fmt.Errorf("%w: inner: %v", result.ErrMalformed, err))
	}
	name, certKey, err := o.cert(in.ClientCert)
	if err != nil {
		return nil, refuse(pub, outer, env.Sig, fmt.Errorf("client certificate in result: %w", err))
	}
	var inner []byte
	if !session {
		c := in
		c.Sig = nil
		payload, err := codec.Marshal(&c)
		if err != nil {
			return nil, err
		}
		inner = append(append(make([]byte, 0, len(innerDomain)+len(payload)), innerDomain...), payload...)
	}
	if !certKey.Equal(ed25519.PublicKey(env.Client)) || string(in.Job) != string(env.Job) {
		// Refused whatever the signatures; named as result.Open names it.
		err := fmt.Errorf("%w: inner and outer disagree on job or client", result.ErrForged)
		if !session && (len(certKey) != ed25519.PublicKeySize || !sigverify.Verify(certKey, inner, in.Sig)) {
			err = fmt.Errorf("%w: inner signature", result.ErrForged)
		}
		return nil, refuse(pub, outer, env.Sig, err)
	}
	return &unsealed{in: &in, client: name, key: env.Client, pub: pub, outer: outer, outSig: env.Sig, inner: inner}, nil
}

// refuse returns err, or the outer signature's failure when that fails
// too (result.Open checks it first).
func refuse(pub *voi.ExpandedPublicKey, outer, sig []byte, err error) error {
	if !voi.VerifyExpanded(pub, outer, sig) {
		return fmt.Errorf("%w: outer signature", result.ErrForged)
	}
	return err
}

// verifySigs checks the signatures of results, together; per result, nil
// or why it is refused. Results a client signed in one batch
// (result.SignOuterBatch) carry the same outer signature over the same
// root message: such a signature is added to the batch once, and its
// verdict is every such result's — the check is on the whole (key,
// message, signature), so a result whose path leads to another root, or
// that names another key, is a signature of its own.
func verifySigs(rs []*unsealed) []error {
	errs := make([]error, len(rs))
	if len(rs) == 0 {
		return errs
	}
	bv := voi.NewBatchVerifierWithCapacity(2 * len(rs))
	at := make([]int, len(rs))   // where each result's outer signature is in the batch
	inAt := make([]int, len(rs)) // where its inner signature is, -1: none
	seen := make(map[string]int, len(rs))
	var key []byte
	n := 0
	for i, r := range rs {
		key = append(append(append(key[:0], r.key...), r.outSig...), r.outer...)
		if j, ok := seen[string(key)]; ok {
			at[i] = j
		} else {
			at[i] = n
			seen[string(key)] = n
			bv.AddExpanded(r.pub, r.outer, r.outSig)
			n++
		}
		inAt[i] = -1
		if r.inner != nil {
			inAt[i] = n
			bv.AddExpanded(r.pub, r.inner, r.in.Sig)
			n++
		}
	}
	ok, valid := bv.Verify(nil) // nil: crypto/rand picks the batch's coefficients
	if ok {
		return errs
	}
	for i := range rs {
		switch {
		case !valid[at[i]]:
			errs[i] = fmt.Errorf("%w: outer signature", result.ErrForged)
		case inAt[i] >= 0 && !valid[inAt[i]]:
			errs[i] = fmt.Errorf("%w: inner signature", result.ErrForged)
		}
	}
	return errs
}

// toResult is an opened result as the ledger keeps it (CID left empty).
func (u *unsealed) toResult() *Result {
	in := u.in
	return &Result{Client: u.client, ClientKey: u.key, Output: in.Output, ExitCode: int(in.ExitCode), Error: in.Error, Killed: result.KilledBy(in.Error),
		CPU: time.Duration(in.CPU) * time.Millisecond, Wall: time.Duration(in.Wall) * time.Millisecond, At: time.UnixMilli(in.At), Salt: in.Salt}
}

// open unseals and verifies one result envelope end to end.
func (o *opener) open(b, key []byte) (*Result, error) {
	u, err := o.unseal(b, key)
	if err != nil {
		return nil, err
	}
	if err := verifySigs([]*unsealed{u})[0]; err != nil {
		return nil, err
	}
	return u.toResult(), nil
}

// openKeys are the project's result keys: the private one and its public
// key, computed once.
type openKeys struct {
	priv *[32]byte
	pub  [32]byte
}

func (p *Project) openKeys() *openKeys {
	priv := p.a.Identity().ResultKey
	p.keysMu.Lock()
	defer p.keysMu.Unlock()
	if p.resultKeys == nil || p.resultKeys.priv != priv {
		p.resultKeys = newOpenKeys(priv)
	}
	return p.resultKeys
}

func newOpenKeys(priv *[32]byte) *openKeys {
	o := &openKeys{priv: priv}
	x25519.ScalarBaseMult(&o.pub, priv)
	return o
}

// maxClientKeys bounds the expanded client keys a project keeps; the cache
// starts afresh when full.
const maxClientKeys = 4096

// clientKey returns a client's public key expanded for verification,
// from the cache; an error for a key that is not a valid one.
func (c *keyCaches) clientKey(pub []byte) (*voi.ExpandedPublicKey, error) {
	c.keysMu.Lock()
	k, ok := c.clientKeys[string(pub)]
	c.keysMu.Unlock()
	if ok {
		return k, nil
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("client key of %d bytes", len(pub))
	}
	k, err := voi.NewExpandedPublicKey(voi.PublicKey(pub))
	if err != nil {
		return nil, err
	}
	c.keysMu.Lock()
	if c.clientKeys == nil || len(c.clientKeys) >= maxClientKeys {
		c.clientKeys = map[string]*voi.ExpandedPublicKey{}
	}
	c.clientKeys[string(pub)] = k
	c.keysMu.Unlock()
	return k, nil
}

// openAnonymous is nacl/box.OpenAnonymous with the recipient's public key
// given and X25519 from curve25519-voi.
func openAnonymous(sealed []byte, pub, priv *[32]byte) ([]byte, bool) {
	if len(sealed) < box.AnonymousOverhead {
		return nil, false
	}
	var eph [32]byte
	copy(eph[:], sealed[:32])
	var nonce [24]byte
	h, err := blake2b.New(24, nil)
	if err != nil {
		return nil, false
	}
	h.Write(eph[:])
	h.Write(pub[:])
	h.Sum(nonce[:0])
	var shared [32]byte
	x25519.ScalarMult(&shared, priv, &eph) //nolint:staticcheck // as box.Precompute: a low-order point makes a key no box opens with
	salsa.HSalsa20(&shared, &zeroNonce, &shared, &salsa.Sigma)
	return box.OpenAfterPrecomputation(nil, sealed[32:], &nonce, &shared)
}

var zeroNonce [16]byte

// keyCaches are the project's caches of keys for opening results.
type keyCaches struct {
	keysMu     sync.Mutex
	resultKeys *openKeys
	clientKeys map[string]*voi.ExpandedPublicKey
	// sessions are the ciphers of result sessions whose notes verified,
	// by client key, ephemeral key and the project's result key.
	sessions map[string]cipher.AEAD
}

// maxSessions bounds the result sessions a project keeps the keys of;
// the cache starts afresh when full.
const maxSessions = 4096

// openSealed opens an envelope's sealed bytes (result.OpenSealed): a
// session's with its key from the cache — made, once its note verified
// under the envelope's client key pub, on the session's first result —
// else Seal's anonymous box.
func (o *opener) openSealed(env *result.Envelope, pub *voi.ExpandedPublicKey) (plain []byte, session, ok bool) {
	if ss, is := result.SplitSession(env.Sealed); is {
		if aead := o.cache.session(o.keys, env.Client, ss, pub); aead != nil {
			if plain, err := aead.Open(nil, ss.Nonce, ss.Ciphertext, result.SessionAD(env.Job, env.Client)); err == nil {
				return plain, true, true
			}
		}
	}
	plain, ok = openAnonymous(env.Sealed, &o.keys.pub, o.keys.priv)
	return plain, false, ok
}

// session returns the cipher of client's session ss with the project's
// keys, nil when its note does not verify under pub (the client's key).
func (c *keyCaches) session(keys *openKeys, client []byte, ss result.SessionSealed, pub *voi.ExpandedPublicKey) cipher.AEAD {
	id := string(client) + string(ss.Eph) + string(keys.pub[:])
	c.keysMu.Lock()
	aead, ok := c.sessions[id]
	c.keysMu.Unlock()
	if ok {
		return aead
	}
	if !voi.VerifyExpanded(pub, result.SessionNoteMessage(keys.pub[:], ss.Eph), ss.Note) {
		return nil
	}
	shared, err := curve25519.X25519(keys.priv[:], ss.Eph)
	if err != nil {
		return nil // a low-order key: no session
	}
	aead, err = result.SessionAEAD(shared, ss.Eph, keys.pub[:], client)
	if err != nil {
		return nil
	}
	c.keysMu.Lock()
	if c.sessions == nil || len(c.sessions) >= maxSessions {
		c.sessions = map[string]cipher.AEAD{}
	}
	c.sessions[id] = aead
	c.keysMu.Unlock()
	return aead
}
