package project

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// Description is what `up project describe` reports of a job, or of each
// job of a unit: what the ledger, the job's replicas and its index nodes
// say, and a verdict. Every answer is a node's word, attributed to it;
// describing changes nothing. JSON field names are stable (the project's
// web page shows them); durations are in seconds under keys ending _s.
type Description struct {
	Asked string           `json:"asked"` // the job or unit asked about
	Unit  int64            `json:"unit"`
	Jobs  []JobDescription `json:"jobs"`
}

// JobDescription describes one job.
type JobDescription struct {
	Job         string   `json:"job"` // CID
	Unit        int64    `json:"unit"`
	Copy        int      `json:"copy"`
	LedgerState string   `json:"ledger_state"`
	App         string   `json:"app"`
	Keywords    []string `json:"keywords"` // those it is listed under
	// Replication is r: the job's closest nodes asked.
	Replication int             `json:"replication"`
	Replicas    []ReplicaAnswer `json:"replicas"`
	Index       []IndexAnswer   `json:"index"`
	Verdict     []Reason        `json:"verdict"`
}

// ReplicaAnswer is what one of a job's closest nodes said of it.
type ReplicaAnswer struct {
	Node      string  `json:"node"`
	Error     string  `json:"error,omitempty"` // "unreachable: ..." when it did not answer
	Held      bool    `json:"held"`
	State     string  `json:"state,omitempty"`    // open, granted, claimed, done, collected
	Claimant  string  `json:"claimant,omitempty"` // the client's key, hex (first 8 bytes)
	ClaimAgeS float64 `json:"claim_age_s,omitempty"`
	Results   int     `json:"results"`
	Releases  int     `json:"releases"`
	Notes     []Note  `json:"notes,omitempty"`
}

// IndexAnswer is what one index node of a keyword's region said of the
// keyword and the job.
type IndexAnswer struct {
	Keyword     string `json:"keyword"`
	Node        string `json:"node"`
	Error       string `json:"error,omitempty"`
	Listed      bool   `json:"listed"`
	Quarantined bool   `json:"quarantined"`
	Served      int    `json:"served"`
	Queries     int    `json:"queries"`
	// LastQueryS is how long before the answer the latest query for the
	// keyword came, on the node's clock (-1: none since it started).
	LastQueryS float64 `json:"last_query_s"`
	Declines   int     `json:"declines"`
	Notes      []Note  `json:"notes,omitempty"`
}

// Note is a release or decline a node recorded: the client (its key, hex,
// first 8 bytes), its reason (its word) and how long ago.
type Note struct {
	Client string  `json:"client"`
	Reason string  `json:"reason"`
	Code   string  `json:"code"` // the reason's stable name (SkipCode)
	AgeS   float64 `json:"age_s"`
}

// Reason is one line of a verdict: why the job does not run (or what it
// is doing), and what would make it run.
type Reason struct {
	Code string `json:"code"` // stable: not-allowed, same-unit, no-query, unreachable, ...
	Why  string `json:"why"`
	Fix  string `json:"fix,omitempty"`
}

// DescribeTimeout bounds each question Describe asks a node: 5 s.
const DescribeTimeout = 5 * time.Second

// maxIndexAsked bounds the index nodes asked per keyword.
const maxIndexAsked = 16

// Describe says why a job of the project does not run: asked a job's CID
// or a unit's number (the ledger's, as a description shows it), it
// describes the job, or each job of the unit, from the ledger, its r
// closest nodes (ProtoJobExplain) and the index nodes of each keyword's
// region (ProtoIndexExplain), with a verdict. It changes nothing.
func (p *Project) Describe(ctx context.Context, l *Ledger, jobOrUnit string) (*Description, error) {
	jobs, unit, err := l.describeJobs(jobOrUnit)
	if err != nil {
		return nil, err
	}
	d := &Description{Asked: jobOrUnit, Unit: unit}
	for _, lj := range jobs {
		jd, err := p.describeJob(ctx, lj)
		if err != nil {
			return nil, err
		}
		d.Jobs = append(d.Jobs, *jd)
	}
	return d, nil
}

// ledgerJob is a job as the ledger records it.
type ledgerJob struct {
	cid    string
	unit   int64
	copy   int
	state  string
	signed []byte
}

// ErrNotDescribed reports a job or unit the ledger does not know.
var ErrNotDescribed = errors.New("not in the ledger")

// describeJobs returns the ledger's jobs of jobOrUnit (a CID, or a unit's
// number) and their unit.
func (l *Ledger) describeJobs(jobOrUnit string) ([]ledgerJob, int64, error) {
	q := `SELECT j.cid, j.unit, j.copy, j.state, s.signed FROM jobs j JOIN specs s ON s.job = j.id WHERE `
	var arg any
	if n, err := strconv.ParseInt(strings.TrimPrefix(jobOrUnit, "unit"), 10, 64); err == nil {
		q, arg = q+`j.unit = ? ORDER BY j.copy`, n
	} else if c, err := cid.Decode(jobOrUnit); err == nil {
		q, arg = q+jobWithCID("j", "?1"), c.String()
	} else {
		return nil, 0, fmt.Errorf("%q is neither a job's CID nor a unit's number", jobOrUnit)
	}
	if err := l.indexCIDs(); err != nil {
		return nil, 0, err
	}
	rows, err := l.db.Query(q, arg)
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: jobs of %s: %w", jobOrUnit, err)
	}
	defer rows.Close()
	var out []ledgerJob
	for rows.Next() {
		var j ledgerJob
		if err := rows.Scan(&j.cid, &j.unit, &j.copy, &j.state, &j.signed); err != nil {
			return nil, 0, fmt.Errorf("ledger: jobs of %s: %w", jobOrUnit, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("ledger: jobs of %s: %w", jobOrUnit, err)
	}
	if len(out) == 0 {
		return nil, 0, fmt.Errorf("job or unit %s: %w", jobOrUnit, ErrNotDescribed)
	}
	return out, out[0].unit, nil
}

// describeJob asks the job's closest nodes and its keywords' index nodes
// about it, and judges.
func (p *Project) describeJob(ctx context.Context, lj ledgerJob) (*JobDescription, error) {
	s, spec, err := job.Decode(lj.signed)
	if err != nil {
		return nil, fmt.Errorf("job %s in the ledger: %w", lj.cid, err)
	}
	r := p.a.DHT().Replication()
	jd := &JobDescription{Job: lj.cid, Unit: lj.unit, Copy: lj.copy, LedgerState: lj.state, App: spec.App,
		Keywords: job.ListingOf(s, spec).Keywords, Replication: r}
	if spec.Project != p.Name() {
		return nil, fmt.Errorf("job %s is of project %q", lj.cid, spec.Project)
	}
	place, err := s.PlaceKey()
	if err != nil {
		return nil, fmt.Errorf("job %s in the ledger: %w", lj.cid, err)
	}
	jd.Replicas = p.askReplicas(ctx, s.Key(), place, r)
	var wg sync.WaitGroup
	answers := make([][]IndexAnswer, len(jd.Keywords))
	for i, kw := range jd.Keywords {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = p.askIndex(ctx, kw, s.Key())
		}()
	}
	wg.Wait()
	for _, a := range answers {
		jd.Index = append(jd.Index, a...)
	}
	jd.Verdict = judge(jd, p.Name())
	return jd, nil
}

// askReplicas asks the job's r closest nodes (to its place key) what
// they hold of it; when they cannot be found, one answer says why.
func (p *Project) askReplicas(ctx context.Context, key, place []byte, r int) []ReplicaAnswer {
	nodes, err := p.a.DHT().ClosestN(dht.WithPurpose(ctx, dht.PurposeHarvest), place, r)
	if err != nil || len(nodes) == 0 {
		return []ReplicaAnswer{{Error: fmt.Sprintf("unreachable: finding the job's closest nodes: %v", err)}}
	}
	out := make([]ReplicaAnswer, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = p.askReplica(ctx, n, key)
		}()
	}
	wg.Wait()
	return out
}

func (p *Project) askReplica(ctx context.Context, n peer.ID, key []byte) ReplicaAnswer {
	ctx, cancel := context.WithTimeout(ctx, DescribeTimeout)
	defer cancel()
	a := ReplicaAnswer{Node: n.String()}
	var resp wire.JobExplainResponse
	if err := p.a.Endpoint().Call(ctx, n, wire.ProtoJobExplain, &wire.JobExplainRequest{Job: key}, wire.MaxExplainFrame, &resp); err != nil {
		a.Error = fmt.Sprintf("unreachable: %v", err)
		return a
	}
	a.Held, a.State, a.Results, a.Releases = resp.Held, resp.State, resp.Results, resp.Releases
	a.Claimant, a.ClaimAgeS = clientName(resp.Claimant), seconds(resp.ClaimAgeMS)
	a.Notes = notes(resp.Notes)
	return a
}

// askIndex asks the index nodes of keyword kw's region (at most
// maxIndexAsked) about kw and the job.
func (p *Project) askIndex(ctx context.Context, kw string, key []byte) []IndexAnswer {
	nodes, err := p.a.Index().RegionNodes(ctx, kw)
	if err != nil || len(nodes) == 0 {
		return []IndexAnswer{{Keyword: kw, Error: fmt.Sprintf("unreachable: %v", err), LastQueryS: -1}}
	}
	nodes = nodes[:min(len(nodes), maxIndexAsked)]
	out := make([]IndexAnswer, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = p.askIndexNode(ctx, n, kw, key)
		}()
	}
	wg.Wait()
	return out
}

func (p *Project) askIndexNode(ctx context.Context, n peer.ID, kw string, key []byte) IndexAnswer {
	ctx, cancel := context.WithTimeout(ctx, DescribeTimeout)
	defer cancel()
	a := IndexAnswer{Keyword: kw, Node: n.String(), LastQueryS: -1}
	var resp wire.IndexExplainResponse
	req := &wire.IndexExplainRequest{Keyword: kw, Job: key}
	if err := p.a.Endpoint().Call(ctx, n, wire.ProtoIndexExplain, req, wire.MaxExplainFrame, &resp); err != nil {
		a.Error = fmt.Sprintf("unreachable: %v", err)
		return a
	}
	a.Listed, a.Quarantined, a.Served, a.Queries, a.Declines = resp.Listed, resp.Quarantined, resp.Served, resp.Queries, resp.Declines
	if resp.LastQueryMS >= 0 {
		a.LastQueryS = seconds(resp.LastQueryMS)
	}
	a.Notes = notes(resp.Notes)
	return a
}

// notes are a node's notes as a description shows them (a node may send
// at most wire.MaxExplainNotes: the wire checks it).
func notes(ns []wire.ExplainNote) []Note {
	out := make([]Note, 0, len(ns))
	for _, n := range ns {
		out = append(out, Note{Client: clientName(n.Client), Reason: n.Reason.String(), Code: SkipCode(n.Reason), AgeS: seconds(n.AgeMS)})
	}
	return out
}

// clientName names a client by its key: the first 8 bytes, hex ("" for
// none).
func clientName(key []byte) string {
	return hex.EncodeToString(key[:min(len(key), 8)])
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }

// SkipCode is a skip reason's stable name in a description.
func SkipCode(r wire.SkipReason) string {
	codes := [...]string{"unknown", "not-allowed", "same-unit", "no-blobs", "memory", "deadline", "failed", "stopping", "fetch"}
	if int(r) < len(codes) {
		return codes[r]
	}
	return fmt.Sprintf("reason-%d", r)
}
