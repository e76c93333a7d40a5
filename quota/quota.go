// Package quota owns a client's quota of jobs in progress (issue 22,
// "hoarders and broken hosts"): the decision its record nodes — the r
// nodes closest to the client's credit key, which also hold its credit
// receipts — make before they give it a ticket to claim a job.
//
// A Book keeps per client its quota and the jobs it holds tickets for,
// each until a deadline on the record node's own clock (the hold the
// client asked for, at most MaxHoldMS) or until the client reports the
// job ended. A ticket is given only while the client holds fewer jobs
// than its quota. The quota starts at Initial, halves (to Min at least)
// on each error the client reports or a record node forwards, and
// doubles (to Max at most) on each valid result a project's credit
// receipt credits: BOINC's daily quota, with the project's signature,
// not the client's word, as the only way up.
//
// The package is pure: no clock, network or randomness; times are Unix
// milliseconds passed in.
package quota

import (
	"errors"
	"fmt"
	"slices"
)

// Defaults of a Config.
const (
	DefaultInitial   = 8                // jobs in progress a new client may hold
	DefaultMin       = 1                // the least quota: a broken host still gets one job to prove itself
	DefaultMax       = 64               // the most
	DefaultMaxHoldMS = 24 * 3600 * 1000 // the longest hold a ticket may ask: a day
	// recentReports is how many reported jobs are remembered per client,
	// so a report that reaches a node twice counts once.
	recentReports = 64
)

// ErrOverQuota refuses a ticket: the client holds as many jobs as its
// quota allows.
var ErrOverQuota = errors.New("client holds its quota of jobs in progress")

// Config bounds a Book. Zero fields take the defaults.
type Config struct {
	Initial   int   // quota of a client not seen before; default DefaultInitial
	Min       int   // least quota; default DefaultMin
	Max       int   // most quota; default DefaultMax
	MaxHoldMS int64 // longest hold a ticket may ask, ms; default DefaultMaxHoldMS
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	if c.Initial == 0 {
		c.Initial = DefaultInitial
	}
	if c.Min == 0 {
		c.Min = DefaultMin
	}
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	if c.MaxHoldMS == 0 {
		c.MaxHoldMS = DefaultMaxHoldMS
	}
}

// Validate reports the first bad field of c, after ApplyDefaults.
func (c *Config) Validate() error {
	switch {
	case c.Min < 1 || c.Min > c.Initial || c.Initial > c.Max:
		return fmt.Errorf("quota config: want 1 <= Min (%d) <= Initial (%d) <= Max (%d)", c.Min, c.Initial, c.Max)
	case c.MaxHoldMS < 1:
		return fmt.Errorf("quota config: MaxHoldMS %d is not positive", c.MaxHoldMS)
	}
	return nil
}

// Outcome is how a job a client held ended, as it reports it.
type Outcome uint8

// Outcomes.
const (
	Done     Outcome = 1 // its result was delivered
	Released Outcome = 2 // given back before it ran, or while running
	Failed   Outcome = 3 // it ran and failed: an error result, a limit kill
)

func (o Outcome) String() string {
	switch o {
	case Done:
		return "done"
	case Released:
		return "released"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Valid reports whether o is a known outcome.
func (o Outcome) Valid() bool { return o >= Done && o <= Failed }

// Account is what a record node knows of one client.
type Account struct {
	Quota    int              `json:"quota"`
	Held     map[string]int64 `json:"held"`     // job key → end of its hold, Unix ms on this node's clock
	Errors   uint64           `json:"errors"`   // errors counted (reported or forwarded)
	Valid    uint64           `json:"valid"`    // valid results counted from credit receipts
	Reported []string         `json:"reported"` // the latest reported jobs, oldest first (≤ recentReports)
}

// Book is a record node's accounts, by client key. Not safe for
// concurrent use: its owner serialises calls.
type Book struct {
	cfg      Config
	accounts map[string]*Account
}

// NewBook is an empty book with cfg (defaults applied; Validate first).
func NewBook(cfg Config) *Book {
	cfg.ApplyDefaults()
	return &Book{cfg: cfg, accounts: map[string]*Account{}}
}

// Config is the book's config, defaults applied.
func (b *Book) Config() Config { return b.cfg }

// Account returns client's account, nil when none.
func (b *Book) Account(client string) *Account { return b.accounts[client] }

// Restore sets client's account (loaded from the node's store).
func (b *Book) Restore(client string, a *Account) {
	if a.Held == nil {
		a.Held = map[string]int64{}
	}
	a.Quota = min(max(a.Quota, b.cfg.Min), b.cfg.Max)
	b.accounts[client] = a
}

// Len is the number of accounts.
func (b *Book) Len() int { return len(b.accounts) }

func (b *Book) account(client string) *Account {
	a := b.accounts[client]
	if a == nil {
		a = &Account{Quota: b.cfg.Initial, Held: map[string]int64{}}
		b.accounts[client] = a
	}
	return a
}

// expire drops a's holds that ended by now.
func expire(a *Account, now int64) {
	for j, end := range a.Held {
		if now >= end {
			delete(a.Held, j)
		}
	}
}

// Ticket decides whether client may claim job, holding it for holdMS (at
// most MaxHoldMS) from now: nil, and the job held, when it holds fewer
// jobs than its quota (or holds this job already: a ticket asked again);
// ErrOverQuota, with its figures, when not.
func (b *Book) Ticket(client, job string, holdMS, now int64) error {
	a := b.account(client)
	expire(a, now)
	holdMS = min(max(holdMS, 1), b.cfg.MaxHoldMS)
	if _, ok := a.Held[job]; !ok && len(a.Held) >= a.Quota {
		return fmt.Errorf("%w: %d held, quota %d (%d errors, %d valid results counted)", ErrOverQuota, len(a.Held), a.Quota, a.Errors, a.Valid)
	}
	a.Held[job] = now + holdMS
	return nil
}

// Report applies a client's report that job ended with outcome: the job
// is no longer held, and a failure halves the quota. A job reported
// before (a forwarded copy) changes nothing. It reports whether the
// account changed.
func (b *Book) Report(client, job string, outcome Outcome) bool {
	a := b.account(client)
	if slices.Contains(a.Reported, job) {
		return false
	}
	a.Reported = append(a.Reported, job)
	if len(a.Reported) > recentReports {
		a.Reported = slices.Delete(a.Reported, 0, len(a.Reported)-recentReports)
	}
	delete(a.Held, job)
	if outcome == Failed {
		a.Errors++
		a.Quota = max(b.cfg.Min, a.Quota/2)
	}
	return true
}

// Credit applies n valid results a project's receipt newly credits to
// the client: the quota doubles per result, up to Max.
func (b *Book) Credit(client string, n int) {
	if n <= 0 {
		return
	}
	a := b.account(client)
	a.Valid += uint64(n)
	for range min(n, 8) {
		a.Quota = min(b.cfg.Max, a.Quota*2)
	}
}
