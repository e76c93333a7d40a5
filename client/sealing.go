package client

import (
	"crypto/ed25519"
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
	by map[string]sessionMade
}

type sessionMade struct {
	s    *result.Session
	made time.Time
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
	if !ok || now.Sub(m.made) >= SessionLifetime || now.Before(m.made) || m.s.Count() >= result.SessionMaxResults {
		s, err := result.NewSession(key, projectKey, nil)
		if err != nil {
			c.seal.mu.Unlock()
			return nil, err
		}
		if c.seal.by == nil || len(c.seal.by) >= maxSessions {
			c.seal.by = map[string]sessionMade{}
		}
		m = sessionMade{s: s, made: now}
		c.seal.by[id] = m
	}
	c.seal.mu.Unlock()
	return m.s.Seal(in, nil)
}
