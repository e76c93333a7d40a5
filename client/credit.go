package client

import (
	"context"
	"crypto/ed25519"
	"sync"
	"time"

	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditclient"
)

// creditFresh is how long a gathered credit is served again before the
// client's nodes are asked anew: a page polling every few seconds costs
// the overlay one gathering (a lookup and r gets) per half minute.
const creditFresh = 30 * time.Second

// CreditReport is this client's credit as its nodes hold it: the
// receipts projects signed, verified and summed (credit.Sum).
type CreditReport struct {
	credit.Credit
	Asked    int    `json:"asked"`    // the client's closest nodes asked
	Answered int    `json:"answered"` // those that answered
	Error    string `json:"error,omitempty"`
	AgeS     int64  `json:"age_s"` // seconds since gathered
}

// creditCache holds the latest gathering.
type creditCache struct {
	mu  sync.Mutex
	at  time.Time
	rep CreditReport
}

// Credit gathers this client's credit receipts from the nodes closest
// to its credit key and sums them, or returns the gathering of the last
// creditFresh.
func (c *Client) Credit(ctx context.Context) CreditReport {
	c.credit.mu.Lock()
	defer c.credit.mu.Unlock()
	now := c.cfg.Now()
	if !c.credit.at.IsZero() && now.Sub(c.credit.at) < creditFresh && now.After(c.credit.at) {
		rep := c.credit.rep
		rep.AgeS = int64(now.Sub(c.credit.at) / time.Second)
		return rep
	}
	a := c.cfg.Agent
	key := a.Identity().Key.Public().(ed25519.PublicKey)
	cr, g, err := creditclient.Show(ctx, a.Endpoint(), a.DHT(), key, now)
	rep := CreditReport{Credit: cr, Asked: g.Asked, Answered: len(g.Sources)}
	if err != nil {
		rep.Credit.Client = key
		rep.Error = err.Error()
		return rep // not cached: the next asks again
	}
	c.credit.at, c.credit.rep = now, rep
	return rep
}
