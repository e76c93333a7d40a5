package client

import (
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"time"

	"github.com/up-pool/up/result"
)

// SessionLifetime is how long a client seals results to one project
// under one session (result.Session) before it makes another: a leaked
// ephemeral key exposes at most this long's results.
const SessionLifetime = time.Hour

// maxSessions bounds the sessions a client keeps (one per project result
// key); the set starts afresh when full.
const maxSessions = 64

// sessions are a client's result sessions, by client key and project
// result key.
type sessions struct {
	mu sync.Mutex
	by map[string]*sessionMade
}

type sessionMade struct {
	s      *result.Session
	made   time.Time
	sealed int // results sealed under it
}

// sealResult seals in to the project's result key under the client's
// session with it, made anew at first, after SessionLifetime on the
// client's clock (or when the clock went back) and after
// result.SessionMaxResults results.
func (c *Client) sealResult(in result.Inner, key ed25519.PrivateKey, projectKey []byte) (*result.Envelope, error) {
	now := c.cfg.Now()
	id := string(key.Public().(ed25519.PublicKey)) + string(projectKey)
	c.seal.mu.Lock()
	m, ok := c.seal.by[id]
	if !ok || m.spent(now) {
		s, err := result.NewSession(key, projectKey, rand.Reader)
		if err != nil {
			c.seal.mu.Unlock()
			return nil, err
		}
		if c.seal.by == nil || len(c.seal.by) >= maxSessions {
			c.seal.by = map[string]*sessionMade{}
		}
		m = &sessionMade{s: s, made: now}
		c.seal.by[id] = m
	}
	m.sealed++
	s := m.s
	c.seal.mu.Unlock()
	return s.Seal(in, rand.Reader)
}

// spent reports whether a session is to be made anew at now (the
// client's clock): SessionLifetime after it was made, when the clock went
// back past its making, or after result.SessionMaxResults results.
func (m *sessionMade) spent(now time.Time) bool {
	return now.Sub(m.made) >= SessionLifetime || now.Before(m.made) || m.sealed >= result.SessionMaxResults
}
