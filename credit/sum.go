package credit

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Source is what one node answered for a client's receipts: From names
// the node (a peer ID as text), so a receipt it forged or altered is
// attributed to it.
type Source struct {
	From     string
	Receipts [][]byte
}

// Rejection is a receipt that did not verify, and who sent it.
type Rejection struct {
	From    string `json:"from"`
	Project string `json:"project,omitempty"` // as the receipt says, when it decodes
	Seq     uint64 `json:"seq,omitempty"`
	Err     string `json:"error"`
}

// Conflict is a project that signed two different receipts with the same
// sequence number, or whose consecutive receipts' totals disagree with
// what the later one credits: the project's own word contradicts itself.
type Conflict struct {
	Project string `json:"project"`
	Seq     uint64 `json:"seq"`
	Why     string `json:"why"`
}

// ProjectCredit is one project's credit for the client: its newest
// verified receipt's figures.
type ProjectCredit struct {
	Project  string `json:"project"`
	Total    uint64 `json:"total"`    // credit granted, by the newest receipt
	Results  uint64 `json:"results"`  // valid results counted in Total
	Seq      uint64 `json:"seq"`      // the newest receipt's sequence number
	Created  int64  `json:"created"`  // when it was signed, Unix ms on the project's clock
	Receipts int    `json:"receipts"` // distinct verified receipts seen
	Sources  int    `json:"sources"`  // nodes that answered the newest receipt
}

// Credit is a client's credit gathered from the overlay: per project, and
// summed.
type Credit struct {
	Client    []byte          `json:"client"`
	Projects  []ProjectCredit `json:"projects"` // by project name
	Total     uint64          `json:"total"`
	Results   uint64          `json:"results"`
	Rejected  []Rejection     `json:"rejected,omitempty"`
	Conflicts []Conflict      `json:"conflicts,omitempty"`
}

// seen is one distinct verified receipt and how many sources sent it.
type seen struct {
	r       *Receipt
	sources int
}

// Sum verifies every receipt the sources sent for client, at now (the
// caller's clock), and sums the client's credit: per project the newest
// receipt (highest sequence number) gives the total, as the project
// signed it; a receipt that does not verify, or credits another client,
// is rejected and attributed to its source. Consecutive receipts of a
// project are checked against each other: receipt n+1's total must be
// receipt n's plus what n+1 credits.
func Sum(client ed25519.PublicKey, sources []Source, v CertVerifier, now time.Time) Credit {
	out := Credit{Client: client}
	byProject := map[string]map[uint64][]*seen{}
	digests := map[[32]byte]*seen{}
	for _, src := range sources {
		for _, b := range src.Receipts {
			d := Digest(b)
			if s, ok := digests[d]; ok {
				s.sources++
				continue
			}
			r, err := Verify(b, v, now)
			if err == nil && !bytes.Equal(r.Client, client) {
				err = fmt.Errorf("%w: receipt %d of project %q", ErrWrongClient, r.Seq, r.Project)
			}
			if err != nil {
				out.Rejected = append(out.Rejected, rejection(src.From, b, err))
				continue
			}
			s := &seen{r: r, sources: 1}
			digests[d] = s
			if byProject[r.Project] == nil {
				byProject[r.Project] = map[uint64][]*seen{}
			}
			byProject[r.Project][r.Seq] = append(byProject[r.Project][r.Seq], s)
		}
	}
	for name, seqs := range byProject {
		pc, conflicts := projectCredit(name, seqs)
		out.Projects = append(out.Projects, pc)
		out.Conflicts = append(out.Conflicts, conflicts...)
		out.Total += pc.Total
		out.Results += pc.Results
	}
	slices.SortFunc(out.Projects, func(a, b ProjectCredit) int { return cmp.Compare(a.Project, b.Project) })
	slices.SortFunc(out.Conflicts, func(a, b Conflict) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}

// rejection describes a receipt that failed, with what of it decodes.
func rejection(from string, b []byte, err error) Rejection {
	rj := Rejection{From: from, Err: err.Error()}
	if _, r, derr := Decode(b); derr == nil {
		rj.Project, rj.Seq = r.Project, r.Seq
	}
	return rj
}

// projectCredit is one project's credit from its verified receipts by
// sequence number, and the contradictions among them.
func projectCredit(name string, seqs map[uint64][]*seen) (ProjectCredit, []Conflict) {
	var conflicts []Conflict
	keys := make([]uint64, 0, len(seqs))
	pc := ProjectCredit{Project: name}
	for seq, ss := range seqs {
		keys = append(keys, seq)
		pc.Receipts += len(ss)
		if len(ss) > 1 {
			conflicts = append(conflicts, Conflict{Project: name, Seq: seq,
				Why: fmt.Sprintf("%d different receipts signed with this sequence number", len(ss))})
		}
	}
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] != keys[i-1]+1 {
			continue
		}
		prev, next := seqs[keys[i-1]][0].r, seqs[keys[i]][0].r
		if next.Total != prev.Total+next.Granted() || next.Results != prev.Results+uint64(len(next.Entries)) {
			conflicts = append(conflicts, Conflict{Project: name, Seq: next.Seq,
				Why: fmt.Sprintf("total %d (%d results) is not receipt %d's %d (%d results) plus the %d it credits",
					next.Total, next.Results, prev.Seq, prev.Total, prev.Results, next.Granted())})
		}
	}
	// The newest; of two with the newest number, the larger total.
	newest := slices.MaxFunc(seqs[keys[len(keys)-1]], func(a, b *seen) int { return cmp.Compare(a.r.Total, b.r.Total) })
	pc.Total, pc.Results, pc.Seq, pc.Created, pc.Sources = newest.r.Total, newest.r.Results, newest.r.Seq, newest.r.Created, newest.sources
	return pc, conflicts
}

// IsRejection reports whether err is one of the package's rejections of a
// receipt (as opposed to a failure to ask for one).
func IsRejection(err error) bool {
	for _, e := range []error{ErrMalformed, ErrCertificate, ErrBadSignature, ErrFuture, ErrWrongClient} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
