package claimnet

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
)

// ErrUnbound reports a claim reply whose certificate is not bound to the
// node it names: its position record is not signed by the certificate's
// account key or names another peer, or its peer signature is not by the
// named peer's key. Only a forger makes one: it is counted against the
// certificate that signed it.
var ErrUnbound = errors.New("claim reply not bound to the node it names")

// positions remembers the position records verified lately, by the digest
// of the account key and the record: each is verified once, not once per
// reply carrying it. Bounded: it starts afresh when full.
type positions struct {
	mu  sync.Mutex
	max int
	m   map[[sha256.Size]byte]string // verified record -> the peer ID it names
}

func newPositions(max int) *positions {
	return &positions{max: max, m: map[[sha256.Size]byte]string{}}
}

// peerOf returns the peer ID the position record rec, signed by account,
// names; an error when it does not verify.
func (p *positions) peerOf(account ed25519.PublicKey, rec []byte) (string, error) {
	h := sha256.New()
	h.Write(account)
	h.Write(rec)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	p.mu.Lock()
	id, ok := p.m[d]
	p.mu.Unlock()
	if ok {
		return id, nil
	}
	sp, err := certs.UnmarshalSignedPosition(rec)
	if err != nil {
		return "", err
	}
	if err := sp.Verify(account); err != nil {
		return "", err
	}
	p.mu.Lock()
	if len(p.m) >= p.max {
		p.m = map[[sha256.Size]byte]string{}
	}
	p.m[d] = string(sp.Position.PeerID)
	p.mu.Unlock()
	return string(sp.Position.PeerID), nil
}

// bind checks that a reply signed under a node certificate with account
// key account is bound to the node its statement names: the position
// record is the account's and names st.Node, and PeerSig is st.Node's own
// signature over the reply. An Ed25519 peer signature is queued on sigs
// (the caller verifies the batch), any other verified here.
func (s *Service) bind(i int, signed *claim.Signed, st *claim.Statement, account ed25519.PublicKey, sigs *batch) error {
	return bindReply(s.positions, i, signed, st, account, sigs)
}

// bindReply is bind with the position records verified lately in ps.
func bindReply(ps *positions, i int, signed *claim.Signed, st *claim.Statement, account ed25519.PublicKey, sigs *batch) error {
	named, err := ps.peerOf(account, signed.Position)
	if err != nil {
		return fmt.Errorf("%w: position record: %w", ErrUnbound, err)
	}
	if named != string(st.Node) {
		return fmt.Errorf("%w: its position record names peer %s", ErrUnbound, peer.ID(named))
	}
	pub, err := peer.ID(st.Node).ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("%w: no public key in the peer ID: %w", ErrUnbound, err)
	}
	msg, err := signed.Message()
	if err != nil {
		return err // its batch path leads nowhere: forged
	}
	if pub.Type() == crypto.Ed25519 {
		raw, err := pub.Raw()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnbound, err)
		}
		sigs.add(i, ed25519.PublicKey(raw), msg, signed.PeerSig)
		return nil
	}
	if ok, err := pub.Verify(msg, signed.PeerSig); err != nil || !ok {
		return fmt.Errorf("%w: peer signature does not verify", ErrUnbound)
	}
	return nil
}

// forged counts, logs and remembers a forged reply: signer is the name on
// the certificate that signed it, client the confirm's sender.
func (s *Service) forged(signer, client string, node peer.ID, err error) {
	s.mForged.WithLabelValues(signer).Inc()
	s.mu.Lock()
	if len(s.forgers) < 4096 || s.forgers[signer] > 0 {
		s.forgers[signer]++
	}
	s.mu.Unlock()
	s.log.Warn("forged claim reply refused", "signer", signer, "client", client, "names", node, "err", err)
}

// Forged reports the forged replies refused here, by the name on the node
// certificate that signed them (also the up_claim_forged_replies_total
// metric, by signer).
func (s *Service) Forged() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.forgers)
}

// attribute counts a reply refused as unbound or badly signed against
// whoever provably made it: the certificate's holder when its account
// signed the reply's position record and the peer that record names
// signed the statement (only that account's node can have made a
// statement naming another node so), else only the client that sent the
// confirm (a certificate and a position record are public: anyone can
// attach them to garbage).
func (s *Service) attribute(b []byte, client string, node peer.ID, err error) {
	if signer, ok := provenSigner(s.positions, b); ok {
		s.forged(signer, client, node, err)
		return
	}
	s.log.Warn("confirm with a badly signed claim reply refused", "client", client, "names", node, "err", err)
}

// provenSigner returns the name on the certificate of reply b when the
// certificate's account key signed b's position record and the Ed25519 key
// of the peer that record names signed b's statement; false otherwise.
func provenSigner(ps *positions, b []byte) (string, bool) {
	signed, _, err := claim.Decode(b)
	if err != nil {
		return "", false
	}
	c, err := x509.ParseCertificate(signed.Cert)
	if err != nil {
		return "", false
	}
	account, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok {
		return "", false
	}
	named, err := ps.peerOf(account, signed.Position)
	if err != nil {
		return "", false
	}
	pub, err := peer.ID(named).ExtractPublicKey()
	if err != nil || pub.Type() != crypto.Ed25519 {
		return "", false
	}
	raw, err := pub.Raw()
	if err != nil || signed.Verify(ed25519.PublicKey(raw)) != nil {
		return "", false
	}
	return c.Subject.CommonName, true
}
