package project

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"

	"github.com/up-pool/up/job"
)

// Progress is told how far a long operation is (done of total).
type Progress func(done, total int)

// SubmitReport tells what a submission did.
type SubmitReport struct {
	Units     int        // work units in the file
	Jobs      int        // jobs (units × copies)
	Prepared  int        // jobs signed and recorded by this run
	Submitted int        // jobs acknowledged by r replicas in this run
	Already   int        // jobs a previous run had submitted
	Blobs     BlobReport // the local files uploaded, if any
	Errors    []error
}

// SubmitFile submits a job file, resumably: its jobs are signed and
// recorded in the ledger before any is sent, so re-running the same file
// after a crash sends only what was not acknowledged — the same jobs,
// never new copies. source is the file's path: the local files it names
// (UploadFiles) are taken from its directory, and uploaded, each once,
// before any job is sent (again on a re-run: a node holding a blob
// already is sent none of it).
func (p *Project) SubmitFile(ctx context.Context, l *Ledger, file []byte, source string, progress Progress) (SubmitReport, error) {
	units, copies, err := ParseJobFile(file, p.Name())
	if err != nil {
		return SubmitReport{}, fmt.Errorf("job file %s: %w", source, err)
	}
	blobs, err := p.UploadFiles(ctx, units, filepath.Dir(source))
	if err != nil {
		return SubmitReport{Blobs: blobs}, fmt.Errorf("job file %s: %w", source, err)
	}
	// The batch is the file and the blobs it names: a local file changed
	// since an earlier run makes a new batch, not a resumed one.
	h := sha256.New()
	h.Write(file)
	if len(units) > 0 {
		h.Write(units[0].Module)
		for _, in := range units[0].Inputs {
			h.Write(in.Blob)
		}
	}
	rep, err := p.SubmitUnits(ctx, l, units, copies, h.Sum(nil), source, progress)
	rep.Blobs = blobs
	return rep, err
}

// SubmitUnits submits work units, copies of each, as the batch named by
// digest (re-running with the same digest resumes it), resumably like
// SubmitFile.
func (p *Project) SubmitUnits(ctx context.Context, l *Ledger, units []Unit, copies int, digest []byte, source string, progress Progress) (SubmitReport, error) {
	rep := SubmitReport{Units: len(units), Jobs: len(units) * copies}
	b := &batchRecord{digest: digest, source: source, units: len(units), copies: copies, unitIDs: map[int]int64{}}
	id, err := l.findBatch(digest)
	if err != nil {
		return rep, err
	}
	var have map[int64]map[int]bool // copies recorded, by unit
	if id != 0 {
		b.id = id
		if b.unitIDs, have, err = l.batchUnits(id); err != nil {
			return rep, fmt.Errorf("ledger batch: %w", err)
		}
	}
	// Sign what is missing and record it, 1000 jobs a transaction. A new
	// batch's jobs are then sent as signed; a re-run sends what the ledger
	// has as not acknowledged.
	signed, err := p.signUnits(l, b, units, copies, have, id == 0, &rep)
	if err != nil {
		return rep, err
	}
	if b.id == 0 { // no units: record the batch alone
		if b.id, _, err = l.Batch(digest, source, len(units), copies, p.a.Now()); err != nil {
			return rep, err
		}
	}
	if err := p.recordBlobs(l, b.unitIDs, units); err != nil {
		return rep, err
	}
	if id == 0 {
		// A new batch: every job is fresh, none acknowledged.
		rep.Submitted, rep.Errors = p.submitChunks(ctx, l, signed, progress)
		return rep, nil
	}
	sent, errs := p.SubmitPending(ctx, l, b.id, progress)
	rep.Submitted, rep.Errors = sent, errs
	var already int
	if err := l.db.QueryRow(`SELECT COUNT(*) FROM jobs j JOIN units u ON u.id = j.unit WHERE u.batch = ? AND j.state != ?`, b.id, StatePrepared).Scan(&already); err == nil {
		rep.Already = already - sent
	}
	return rep, nil
}

// SpecFor builds the spec of one copy of a unit (fresh nonce).
func (p *Project) SpecFor(u Unit) (*job.Spec, error) {
	spec, err := p.NewSpec(u.App, u.Args, u.Keywords, u.TFinish)
	if err != nil {
		return nil, err
	}
	for i, name := range u.InputFiles {
		if name != "" && len(u.Inputs[i].Blob) == 0 {
			return nil, fmt.Errorf("input %d: local file %s not uploaded (UploadFiles)", i, name)
		}
	}
	if u.ModuleFile != "" && len(u.Module) == 0 {
		return nil, fmt.Errorf("module: local file %s not uploaded (UploadFiles)", u.ModuleFile)
	}
	spec.Resources, spec.Inputs, spec.Module = u.Resources, u.Inputs, u.Module
	spec.Stdin, spec.Outputs = u.Stdin, u.Outputs
	spec.Commit, spec.RevealWait = u.Commit, u.RevealWait.Milliseconds()
	spec.Steps = u.Steps
	spec.Version = spec.LeastVersion()
	if u.Lifetime > 0 {
		spec.Lifetime = u.Lifetime.Milliseconds()
	}
	return spec, nil
}

// SubmitPending sends the batch's (every batch's, with 0) recorded jobs
// that r replicas have not acknowledged, in chunks, and records each
// acknowledgement; it returns how many it sent and r replicas
// acknowledged. It first asks each job's nodes whether they hold it
// (heldBy): a job r of them hold (an earlier run sent it and was killed
// before recording the acknowledgement) is recorded as submitted, not
// sent again. Every error names its job.
func (p *Project) SubmitPending(ctx context.Context, l *Ledger, batch int64, progress Progress) (int, []error) {
	pending, err := l.Pending(batch)
	if err != nil {
		return 0, []error{err}
	}
	var errs []error
	jobs := make([]*Prepared, 0, len(pending))
	for _, pj := range pending {
		s, _, err := job.Decode(pj.Signed)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s in the ledger: %w", pj.CID, err))
			continue
		}
		jobs = append(jobs, &Prepared{Signed: s, Listing: pj.Listing, enc: pj.Signed})
	}
	jobs, err = p.skipHeld(ctx, l, jobs)
	if err != nil {
		return 0, append(errs, err)
	}
	sent, more := p.submitChunks(ctx, l, jobs, progress)
	return sent, append(errs, more...)
}

// skipHeld records as submitted the jobs r of their nodes hold, and
// returns the others, to send.
func (p *Project) skipHeld(ctx context.Context, l *Ledger, jobs []*Prepared) ([]*Prepared, error) {
	if len(jobs) == 0 {
		return jobs, nil
	}
	r := p.a.DHT().Replication()
	p.crawlIfDue(ctx, len(jobs))
	held := p.heldBy(ctx, jobs)
	acks := map[string]int{}
	rest := jobs[:0:0]
	for i, j := range jobs {
		if held[i] >= r {
			acks[j.cidString()] = held[i]
			continue
		}
		rest = append(rest, j)
	}
	if err := l.MarkSubmitted(acks, p.a.Now()); err != nil {
		return nil, fmt.Errorf("ledger: record %d jobs their nodes hold: %w", len(acks), err)
	}
	return rest, nil
}

// submitChunks sends recorded jobs in chunks and records each chunk's
// acknowledgements.
func (p *Project) submitChunks(ctx context.Context, l *Ledger, jobs []*Prepared, progress Progress) (int, []error) {
	var errs []error
	sent := 0
	chunk := p.chunk
	if chunk <= 0 {
		chunk = 1000
	}
	for start := 0; start < len(jobs); start += chunk {
		part := jobs[start:min(start+chunk, len(jobs))]
		acks := make(map[string]int, len(part))
		for i, r := range p.Submit(ctx, part) {
			if r.Err != nil {
				errs = append(errs, r.Err)
				continue
			}
			acks[part[i].cidString()] = r.Acks
		}
		if err := l.MarkSubmitted(acks, p.a.Now()); err != nil {
			return sent, append(errs, err)
		}
		sent += len(acks)
		if progress != nil {
			progress(start+len(part), len(jobs))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return sent, errs
}

// AddCopy issues one more copy of a unit (after an inconclusive
// validation): the same application and arguments, a fresh nonce.
func (p *Project) AddCopy(ctx context.Context, l *Ledger, unit int64) error {
	pj, prep, err := p.newCopy(l, unit)
	if err != nil {
		return err
	}
	if err := l.Prepare([]PreparedJob{pj}, p.a.Now()); err != nil {
		return err
	}
	return p.sendCopies(ctx, l, []*Prepared{prep})[0]
}

// newCopy signs one more copy of a unit: the spec of one of its jobs with
// a fresh nonce and creation time, numbered after its highest copy. It
// records nothing.
func (p *Project) newCopy(l *Ledger, unit int64) (PreparedJob, *Prepared, error) {
	signed, maxCopy, err := l.AnyJob(unit)
	if err != nil {
		return PreparedJob{}, nil, fmt.Errorf("unit %d: %w", unit, err)
	}
	_, spec, err := job.Decode(signed)
	if err != nil {
		return PreparedJob{}, nil, err
	}
	nonce := make([]byte, job.NonceLen)
	p.mu.Lock()
	_, err = io.ReadFull(p.rand, nonce)
	p.mu.Unlock()
	if err != nil {
		return PreparedJob{}, nil, err
	}
	spec.Nonce, spec.Created = nonce, p.a.Now().UnixMilli()
	prep, err := p.Sign(spec)
	if err != nil {
		return PreparedJob{}, nil, err
	}
	return PreparedJob{CID: prep.cidString(), Unit: unit, Copy: maxCopy + 1, Signed: prep.Encode(), Listing: prep.Listing}, prep, nil
}

// specsPerSignature is how many jobs a submission signs at once
// (Project.SignBatch): their paths grow by a 32-byte hash each time it
// doubles, the signatures checked per node shrink in proportion.
const specsPerSignature = 64

// signUnits signs the copies of units the ledger lacks (have: those it
// holds, by unit ID) in batches of specsPerSignature, and records them in
// b, 1000 a transaction; keep returns the signed jobs too (a new batch,
// sent as signed). A signed batch is one place (job.PlaceKey), so each
// batch holds one copy of its units, never two of one unit: a unit's
// copies land on different replicas, as they did when each job had its
// own place.
func (p *Project) signUnits(l *Ledger, b *batchRecord, units []Unit, copies int, have map[int64]map[int]bool, keep bool, rep *SubmitReport) ([]*Prepared, error) {
	var fresh []unitJob
	pendingBy := make([][]unitJob, copies)
	specsBy := make([][]*job.Spec, copies)
	var signed []*Prepared
	flush := func() error {
		if len(fresh) == 0 {
			return nil
		}
		err := l.record(b, fresh, p.a.Now())
		fresh = fresh[:0]
		return err
	}
	sign := func(c int) error {
		pending, specs := pendingBy[c], specsBy[c]
		preps, err := p.SignBatch(specs)
		if err != nil {
			return fmt.Errorf("units %d–%d: %w", pending[0].idx, pending[len(pending)-1].idx, err)
		}
		for i, prep := range preps {
			u := pending[i]
			u.PreparedJob = PreparedJob{CID: prep.cidString(), Copy: u.Copy, Signed: prep.Encode(), Listing: prep.Listing}
			fresh = append(fresh, u)
			if keep {
				signed = append(signed, prep)
			}
			rep.Prepared++
			if len(fresh) >= 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		pendingBy[c], specsBy[c] = pending[:0], specs[:0]
		return nil
	}
	for idx, u := range units {
		var got map[int]bool
		if unit, ok := b.unitIDs[idx]; ok {
			got = have[unit]
		}
		for c := range copies {
			if got[c] {
				continue
			}
			spec, err := p.SpecFor(u)
			if err != nil {
				return nil, fmt.Errorf("unit %d: %w", idx, err)
			}
			pendingBy[c] = append(pendingBy[c], unitJob{idx: idx, adaptive: u.Adaptive, PreparedJob: PreparedJob{Copy: c}})
			specsBy[c] = append(specsBy[c], spec)
			if len(specsBy[c]) == specsPerSignature {
				if err := sign(c); err != nil {
					return nil, err
				}
			}
		}
	}
	for c := range specsBy {
		if len(specsBy[c]) > 0 {
			if err := sign(c); err != nil {
				return nil, err
			}
		}
	}
	return signed, flush()
}

// sendCopies submits copies already recorded (Prepare) and records those
// r replicas acknowledged; per copy, why it was not (a copy left
// unacknowledged is retried by a later SubmitPending).
func (p *Project) sendCopies(ctx context.Context, l *Ledger, preps []*Prepared) []error {
	errs := make([]error, len(preps))
	acks := map[string]int{}
	for i, res := range p.Submit(ctx, preps) {
		if res.Err != nil {
			errs[i] = res.Err
			continue
		}
		acks[preps[i].cidString()] = res.Acks
	}
	if err := l.MarkSubmitted(acks, p.a.Now()); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}
