package project

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/job"
)

// StuckAfter is the least time a submitted job goes without a result
// before status calls it stuck; a job whose T_finish is longer gets twice
// its T_finish (a client may hold it that long, and another run it after).
const StuckAfter = 10 * time.Minute

// Stuck is a group of submitted jobs of one application and one query
// (keywords and resource classes) that no client has returned a result
// for in far longer than expected: the ledger's view of a job that
// clients claim and release for ever (an application no volunteer allows)
// or never find (keywords no client queries).
type Stuck struct {
	App      string        `json:"app"`
	Keywords []string      `json:"keywords"` // keywords and resource classes, sorted
	Jobs     int           `json:"jobs"`
	Oldest   time.Duration `json:"-"` // how long ago the oldest was acknowledged by its replicas; JSON oldest_s
	TFinish  time.Duration `json:"-"` // the longest T_finish of the group; JSON t_finish_s
}

// Hint says what a stuck group may mean.
func (s Stuck) Hint() string {
	jobs := "it"
	if s.Jobs > 1 {
		jobs = "them"
	}
	return fmt.Sprintf("no client has run %s in %s: is application '%s' allowed by volunteers, and do their clients query these keywords?",
		jobs, s.Oldest.Round(time.Minute), s.App)
}

// stuck groups the submitted jobs without a result that are older than
// StuckAfter and than twice their T_finish at now, most jobs first.
func (l *Ledger) stuck(now time.Time) ([]Stuck, error) {
	rows, err := l.db.Query(`SELECT s.signed, j.submitted FROM jobs j JOIN specs s ON s.job = j.id WHERE j.state = ? AND j.submitted <= ?`,
		StateSubmitted, now.Add(-StuckAfter).UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("ledger: jobs submitted before %s: %w", now.Add(-StuckAfter).Format(time.RFC3339), err)
	}
	defer rows.Close()
	groups := map[string]*Stuck{}
	for rows.Next() {
		var signed []byte
		var at int64
		if err := rows.Scan(&signed, &at); err != nil {
			return nil, err
		}
		_, spec, err := job.Decode(signed)
		if err != nil {
			continue // not the ledger's to judge here; submit would refuse it
		}
		age, tFinish := now.Sub(time.UnixMilli(at)), time.Duration(spec.TFinish)*time.Millisecond
		if age < 2*tFinish {
			continue
		}
		kw := append(slices.Clone(spec.Keywords), spec.Resources...)
		slices.Sort(kw)
		kw = slices.Compact(kw)
		key := spec.App + "\x00" + strings.Join(kw, "\x00")
		g := groups[key]
		if g == nil {
			g = &Stuck{App: spec.App, Keywords: kw}
			groups[key] = g
		}
		g.Jobs++
		g.Oldest, g.TFinish = max(g.Oldest, age), max(g.TFinish, tFinish)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Stuck, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Stuck) int {
		if a.Jobs != b.Jobs {
			return b.Jobs - a.Jobs
		}
		return strings.Compare(a.App+strings.Join(a.Keywords, " "), b.App+strings.Join(b.Keywords, " "))
	})
	return out, nil
}
