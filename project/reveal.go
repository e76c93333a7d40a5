package project

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// RevealPrefix begins the error a harvest records for a result of a
// commit–reveal job that does not match its client's commitment (or has
// none, or two): the result counts as failed, earns no credit, and stays
// attributed to its client.
const RevealPrefix = "commit–reveal: "

// revealCheckOff turns the reveal check off: only the tests' negative
// control sets it (export_test.go), to show the check is what refuses a
// copied reveal.
var revealCheckOff atomic.Bool

// RevealReport is what checking reveals against commitments did in one
// harvest, and what it cost the project.
type RevealReport struct {
	Checked  int // results of commit–reveal jobs checked
	Refused  int // of those, recorded failed: no matching commitment
	Deferred int // left for the next harvest: too few board nodes answered
	Boards   int // unit boards asked
	RPCs     int // commitment requests sent
	Bytes    int // their request and reply bodies
}

// checkReveals checks each result of a commit–reveal job against the
// commitments its unit's board holds (result.CheckReveal), fetched once
// per board. A result that fails is kept with its Error set
// (RevealPrefix and why), so it is recorded failed; one whose board fewer
// than r − f nodes answered is left out of both lists, not recorded nor
// collected, for the next harvest. results and got are parallel.
func (p *Project) checkReveals(ctx context.Context, l *Ledger, results []Result, got []found, rep *HarvestReport) ([]Result, []found) {
	if len(results) == 0 {
		return results, got
	}
	cids := make([]string, len(results))
	for i := range results {
		cids[i] = results[i].CID
	}
	specs, err := l.jobSpecs(cids)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("commit–reveal: job specs from the ledger: %w", err))
		return nil, nil // nothing recorded or collected: the next harvest tries again
	}
	boards := map[string][]*result.Commit{}
	failed := map[string]error{}
	keepR, keepF := results[:0:0], got[:0:0]
	for i := range results {
		r := &results[i]
		spec := specs[r.CID]
		if spec == nil || !spec.UsesCommit() || revealCheckOff.Load() {
			keepR, keepF = append(keepR, *r), append(keepF, got[i])
			continue
		}
		board := string(spec.BoardKey())
		if _, done := boards[board]; !done && failed[board] == nil {
			cs, err := p.boardCommits(ctx, []byte(board), &rep.Reveals)
			if err != nil {
				failed[board] = err
			} else {
				boards[board] = cs
			}
		}
		if err := failed[board]; err != nil {
			rep.Reveals.Deferred++
			rep.Errors = append(rep.Errors, fmt.Errorf("job %s: result not recorded yet: %w", r.CID, err))
			continue
		}
		rep.Reveals.Checked++
		if err := result.CheckReveal(boards[board], got[i].key, r.ClientKey, r.Output, r.Salt); err != nil {
			rep.Reveals.Refused++
			r.Error = truncateErr(RevealPrefix + err.Error())
		}
		keepR, keepF = append(keepR, *r), append(keepF, got[i])
	}
	return keepR, keepF
}

// truncateErr bounds an error text as a result's (result.MaxErrorLen).
func truncateErr(s string) string {
	if len(s) > result.MaxErrorLen {
		return s[:result.MaxErrorLen]
	}
	return s
}

// boardCommits fetches the commitments a unit's board holds from its r
// closest nodes: the union of what they serve, each signature checked and
// naming this board (a node can withhold a commitment, not forge one).
// It fails unless r − f of them answered, f = ⌊(r−1)/3⌋: a client that
// posted its commitment to a majority then has an honest node among them.
func (p *Project) boardCommits(ctx context.Context, board []byte, rr *RevealReport) ([]*result.Commit, error) {
	rr.Boards++
	r := p.a.DHT().Replication()
	nodes, err := p.a.DHT().ClosestN(dht.WithPurpose(ctx, dht.PurposeHarvest), board, r)
	if err != nil {
		return nil, fmt.Errorf("find the unit's board %x: %w", board, err)
	}
	req := &wire.CommitGetRequest{Board: board}
	reqBytes, _ := wire.Marshal(req)
	resps := make([]wire.CommitGetResponse, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func(i int, n peer.ID) {
			defer wg.Done()
			errs[i] = p.a.Endpoint().Call(ctx, n, wire.ProtoCommitGet, req, wire.MaxCommitFrame, &resps[i])
		}(i, n)
	}
	wg.Wait()
	var out []*result.Commit
	seen := map[string]bool{}
	answered := 0
	var failures []error
	for i := range nodes {
		rr.RPCs++
		rr.Bytes += len(reqBytes)
		if errs[i] != nil {
			failures = append(failures, fmt.Errorf("node %s: %w", nodes[i], errs[i]))
			continue
		}
		answered++
		for _, b := range resps[i].Commits {
			rr.Bytes += len(b)
			c, err := result.DecodeCommit(b)
			if err != nil || c.Verify() != nil || string(c.Board) != string(board) || seen[string(b)] {
				continue
			}
			seen[string(b)] = true
			out = append(out, c)
		}
	}
	if need := r - (r-1)/3; answered < need {
		return nil, fmt.Errorf("unit board %x: %d of its %d nodes answered, %d needed: %w", board, answered, len(nodes), need, errors.Join(failures...))
	}
	return out, nil
}

// qJobSpecs reads the signed specs of the jobs of a JSON array of CIDs.
const qJobSpecs = `SELECT j.cid, s.signed FROM json_each(?) e CROSS JOIN jobs j ON ` + jobIsValue + ` JOIN specs s ON s.job = j.id`

// jobSpecs returns the specs of the ledger's jobs of cids (a job not in
// the ledger is left out), but for the jobs this process recorded whose
// specs cannot use commit–reveal (Ledger.plain): those are left out
// unread, as the caller wants a spec only to see whether it does.
func (l *Ledger) jobSpecs(cids []string) (map[string]*job.Spec, error) {
	cids = l.takePlain(cids)
	out := make(map[string]*job.Spec, len(cids))
	if len(cids) > 0 {
		if err := l.indexCIDs(); err != nil {
			return nil, err
		}
	}
	for start := 0; start < len(cids); start += 256 {
		part := cids[start:min(start+256, len(cids))]
		list, err := jsonArg(part)
		if err != nil {
			return nil, err
		}
		rows, err := l.db.Query(qJobSpecs, list)
		if err != nil {
			return nil, fmt.Errorf("read the specs of %d jobs: %w", len(part), err)
		}
		for rows.Next() {
			var cid string
			var signed []byte
			if err := rows.Scan(&cid, &signed); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read a job's spec: %w", err)
			}
			_, spec, err := job.Decode(signed)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("job %s in the ledger: %w", cid, err)
			}
			out[cid] = spec
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("read the specs of %d jobs: %w", len(part), err)
		}
	}
	return out, nil
}
