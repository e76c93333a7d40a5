package blobclient

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blob/cache"
	"github.com/up-pool/up/blob/fetch"
)

// Store gives a client the blobs its jobs name (client.Blobs): fetched
// from the blob's nodes in parallel, every chunk verified, assembled in an
// on-disk cache keyed by CID, so the jobs that share a blob fetch it once.
// It is safe for concurrent use.
type Store struct {
	a *agent.Agent
	c *cache.Cache

	mu        sync.Mutex
	manifests map[string]*blob.Manifest // blobs fetched into the cache, by key
}

// maxRemembered bounds the manifests a Store remembers (each a few KiB).
const maxRemembered = 4096

// NewStore returns a Store fetching through a into c (required).
func NewStore(a *agent.Agent, c *cache.Cache) (*Store, error) {
	if a == nil || c == nil {
		return nil, errors.New("blob store: an agent and a cache are required")
	}
	return &Store{a: a, c: c, manifests: map[string]*blob.Manifest{}}, nil
}

// Fetch returns the path of the cached, verified bytes of blob key, a blob
// of project: from the cache when this store fetched it before and the
// cached copy still verifies, else from the blob's nodes. A manifest of
// another project is refused.
func (s *Store) Fetch(ctx context.Context, project string, key []byte) (string, error) {
	s.mu.Lock()
	m := s.manifests[string(key)]
	s.mu.Unlock()
	if m != nil {
		if m.Project != project {
			return "", fmt.Errorf("blob %s is project %q's, not %q's", m.CID(), m.Project, project)
		}
		if path, err := s.c.BlobPath(m); err == nil {
			return path, nil
		}
	}
	m, sources, err := Sources(ctx, s.a, key)
	if err != nil {
		return "", fmt.Errorf("blob %x: %w", key, err)
	}
	if m.Project != project {
		return "", fmt.Errorf("blob %s is project %q's, not %q's", m.CID(), m.Project, project)
	}
	res, err := (&fetch.Fetcher{Sources: sources, Cache: s.c}).Fetch(ctx, m)
	if err != nil {
		return "", fmt.Errorf("blob %s: %w", m.CID(), err)
	}
	if res.Path == "" {
		return "", fmt.Errorf("blob %s: not assembled in the cache: %w", m.CID(), res.CacheErr)
	}
	s.mu.Lock()
	if len(s.manifests) >= maxRemembered {
		clear(s.manifests)
	}
	s.manifests[string(key)] = m
	s.mu.Unlock()
	return res.Path, nil
}
