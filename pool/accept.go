package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// staged is a newly accepted job about to enter the pool.
type staged struct {
	key   string
	e     *entry
	state job.State
}

// accepted is the outcome of offering one job to the pool.
type accepted struct {
	key    []byte
	status wire.Status
	msg    string
	isNew  bool
}

// handOn replicates, in the background, the jobs a node just received for
// which this node is the closest in its view: a node that becomes a job's
// closest (it joined, moved, or was missing the job) passes it on to the
// rest of the r closest at once, not a period later.
func (p *Pool) handOn(fresh []staged) {
	self := p.self()
	var keys [][]byte
	for _, f := range fresh {
		if v := p.dht.NearestLocal(f.e.pos, 1); len(v) == 1 && v[0] == self {
			keys = append(keys, []byte(f.key))
		}
	}
	if len(keys) == 0 {
		return
	}
	p.inflight.Go(func() { p.Replicate(p.ctx, keys) })
}

// Quiesce waits until the jobs being handed on have been placed.
func (p *Pool) Quiesce() { p.inflight.Wait() }

func (a *accepted) refuse(status wire.Status, format string, args ...any) {
	a.status, a.msg = status, fmt.Sprintf(format, args...)
}

// accept verifies and stores offered jobs in one synced batch. A job
// already held is not verified again: its key is the hash of its signed
// bytes. from is the sending project (nil when a node sends); a project
// may only store its own jobs, as ready. A node's job arrives with its
// state's proof: the job is stored as never claimed, and its state merged
// like a sync's once the proof holds (applyFrom). src is the sender.
// Refused jobs leave the store unchanged.
func (p *Pool) accept(envs []wire.JobEnvelope, msgCerts [][]byte, from *overlay.Admitted, src *source) []accepted {
	now := p.env.Now()
	run := &acceptRun{p: p, now: now, nowMS: now.UnixMilli(), from: from, offered: make(map[string][]byte, len(msgCerts)),
		batch: p.st.NewBatch(), newCerts: map[string][]byte{}}
	for _, der := range msgCerts {
		run.offered[string(job.CertRef(der))] = der
	}
	out := make([]accepted, len(envs))
	for i, env := range envs {
		run.stage(i, env, &out[i])
	}
	run.commit(out)
	p.mergeOffered(run.merges, envs, out, src)
	refused := 0
	for i := range out {
		if out[i].status != wire.StatusOK {
			refused++
		}
	}
	if refused > 0 {
		p.mRefused.Add(float64(refused))
	}
	source := "node"
	if from != nil {
		source = "project"
	} else if len(run.fresh) > 0 {
		p.handOn(run.fresh)
	}
	var changes []change
	for _, f := range run.fresh {
		changes = append(changes, change{key: []byte(f.key), st: f.state})
	}
	p.notify(changes...)
	p.mStored.WithLabelValues(source).Add(float64(len(run.fresh)))
	return out
}

// acceptRun is one accept call's work: the jobs staged for one synced
// batch, and those whose state is merged after it.
type acceptRun struct {
	p        *Pool
	now      time.Time
	nowMS    int64
	from     *overlay.Admitted // the sending project; nil when a node sends
	offered  map[string][]byte // project certificates sent along, by reference
	batch    *store.Batch
	newCerts map[string][]byte // certificates this batch adds to the pool, by reference
	fresh    []staged          // new jobs, entering the pool once the batch is synced
	merges   []int             // offered jobs whose state is merged (held already, or to be proven)
}

// stage verifies offered job i and puts it in the batch, or records why
// it is refused in a; a job already held only has its state merged.
func (r *acceptRun) stage(i int, env wire.JobEnvelope, a *accepted) {
	v, ok := r.verify(i, env, a)
	if !ok {
		return
	}
	st := env.State // kept unexpired: see Apply
	if job.NeedsProof(st) {
		// The signed spec proves the job; its state must prove itself.
		r.merges = append(r.merges, i)
		st = job.State{}
	}
	rec := record{Signed: env.Signed, State: st, Responsible: r.nowMS, Listing: env.Listing}
	b, err := codec.Marshal(&rec)
	if err != nil {
		a.refuse(wire.StatusInternal, "job %s: %v", v.signed.CID(), err)
		return
	}
	r.batch.Put(store.Key(jobNS, a.key), b)
	if !v.inPool {
		r.newCerts[string(v.spec.CertRef)] = v.der
	}
	a.isNew = true
	e := newEntry(string(a.key), v.signed, v.spec, st, r.nowMS)
	view := r.p.view(e, r.nowMS)
	e.lapsed = st.Phase == job.Claimed && view.Phase != job.Claimed
	r.fresh = append(r.fresh, staged{key: string(a.key), e: e, state: view})
}

// verifiedJob is an offered job that passed verify.
type verifiedJob struct {
	signed *job.Signed
	spec   *job.Spec
	der    []byte // the project's certificate
	inPool bool   // the pool holds that certificate already
}

// verify checks offered job i: well formed, not expired, sent by its own
// project (as never-claimed ready) or by a node, not collected here,
// signed by its project's certified key, its listing naming it. A job
// held already is queued for its state's merge only (false, not refused):
// its key is the hash of its signed bytes.
func (r *acceptRun) verify(i int, env wire.JobEnvelope, a *accepted) (verifiedJob, bool) {
	signed, spec, err := job.Decode(env.Signed)
	if err != nil {
		a.refuse(wire.StatusBadRequest, "job %d: %v", i, err)
		return verifiedJob{}, false
	}
	a.key = signed.Key()
	if exp := spec.Expires(); job.Expired(exp, r.nowMS) {
		a.refuse(wire.StatusGone, "job %s expired at %s on its project's clock", signed.CID(),
			time.UnixMilli(exp).UTC().Format(time.RFC3339))
		return verifiedJob{}, false
	}
	if !r.fromItsProject(signed, spec, env.State, a) {
		return verifiedJob{}, false
	}
	r.p.mu.Lock()
	_, held := r.p.jobs[string(a.key)]
	der, known := r.p.certs[string(spec.CertRef)]
	r.p.mu.Unlock()
	v := verifiedJob{signed: signed, spec: spec, der: der, inPool: known}
	if held {
		r.merges = append(r.merges, i)
		return verifiedJob{}, false
	}
	if _, _, gone := r.p.gone(a.key, r.nowMS); gone {
		a.refuse(wire.StatusGone, "job %s was collected and deleted here", signed.CID())
		return verifiedJob{}, false
	}
	if !known {
		if v.der, known = r.offered[string(spec.CertRef)]; !known {
			a.refuse(wire.StatusBadRequest, "job %s: certificate of project %q not sent", signed.CID(), spec.Project)
			return verifiedJob{}, false
		}
	}
	return v, r.signedByProject(v, env, a)
}

// fromItsProject checks, when a project sends the job, that it is the
// job's own project and offers it never claimed; a node's job passes.
func (r *acceptRun) fromItsProject(signed *job.Signed, spec *job.Spec, st job.State, a *accepted) bool {
	if r.from == nil {
		return true
	}
	if spec.Project != r.from.Identity.Name {
		a.refuse(wire.StatusUnauthorized, "job %s: project %q may not submit jobs of project %q", signed.CID(), r.from.Identity.Name, spec.Project)
		return false
	}
	if st.Phase != job.Ready || st.IsTombstone() {
		a.refuse(wire.StatusBadRequest, "job %s: a project submits never-claimed ready jobs, not %s (client %x, start %d)",
			signed.CID(), st.Phase, st.Client, st.Start)
		return false
	}
	return true
}

// signedByProject checks the job's project certificate and signature,
// and that its listing names it truthfully (the listing's own signature
// is the index nodes' business).
func (r *acceptRun) signedByProject(v verifiedJob, env wire.JobEnvelope, a *accepted) bool {
	id, err := r.p.ep.Admission().Verifier().VerifyCert(v.der, r.now, certs.RoleProject)
	if err != nil {
		a.refuse(wire.StatusUnauthorized, "job %s: project certificate: %v", v.signed.CID(), err)
		return false
	}
	if id.Name != v.spec.Project {
		a.refuse(wire.StatusUnauthorized, "job %s: names project %q but its certificate is %q's", v.signed.CID(), v.spec.Project, id.Name)
		return false
	}
	if err := v.signed.VerifyOnce(id.PublicKey, r.p.sigs); err != nil {
		a.refuse(wire.StatusUnauthorized, "job %s of project %q: %v", v.signed.CID(), v.spec.Project, err)
		return false
	}
	_, listing, err := job.DecodeListing(env.Listing)
	if err != nil {
		a.refuse(wire.StatusBadRequest, "job %s: listing: %v", v.signed.CID(), err)
		return false
	}
	if !listing.Matches(v.signed, v.spec) {
		a.refuse(wire.StatusBadRequest, "job %s: listing does not match the job", v.signed.CID())
		return false
	}
	return true
}

// commit syncs the batch and puts the staged jobs and new certificates in
// the pool; when the store fails, every new job is refused instead.
func (r *acceptRun) commit(out []accepted) {
	for ref, der := range r.newCerts {
		r.batch.Put(store.Key(certNS, []byte(ref)), der)
	}
	if r.batch.Len() > 0 {
		if err := r.batch.Commit(true); err != nil {
			for i := range out {
				if out[i].isNew {
					out[i].isNew = false
					out[i].refuse(wire.StatusInternal, "store: %v", err)
				}
			}
			r.fresh = nil
		}
	}
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	for ref, der := range r.newCerts {
		r.p.certs[ref] = der
	}
	for _, f := range r.fresh {
		if _, dup := r.p.jobs[f.key]; !dup {
			r.p.hold(f.key, f.e)
		}
	}
}

// mergeOffered merges the offered states of the jobs in merges (held
// already, or stored as never claimed) like a sync's; a state whose
// proof needs the sender's envelope waits for it in the background.
func (p *Pool) mergeOffered(merges []int, envs []wire.JobEnvelope, out []accepted, src *source) {
	var unproven []wire.SyncItem
	for _, i := range merges {
		if out[i].status != wire.StatusOK {
			continue
		}
		_, _, err := p.applyFrom(out[i].key, envs[i].State, envs[i].Proof, nil, src)
		switch {
		case errors.Is(err, errNoEnvelope):
			// Stored; the state waits for its envelope from the sender.
			unproven = append(unproven, wire.SyncItem{Key: out[i].key, State: envs[i].State, Proof: envs[i].Proof})
		case err != nil && out[i].isNew:
			p.log.Debug("job stored without its state", "key", out[i].key, "err", err)
		case err != nil:
			out[i].refuse(wire.StatusBadRequest, "%v", err)
		}
	}
	if len(unproven) > 0 {
		p.inflight.Go(func() { p.fetchResults(p.ctx, src, unproven, nil) })
	}
}
