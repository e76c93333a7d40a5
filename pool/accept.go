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
	now := p.cfg.Now()
	nowMS := now.UnixMilli()
	offered := make(map[string][]byte, len(msgCerts))
	for _, der := range msgCerts {
		offered[string(job.CertRef(der))] = der
	}
	out := make([]accepted, len(envs))
	batch := p.st.NewBatch()
	newCerts := map[string][]byte{}
	var fresh []staged
	var merges []int
	for i, env := range envs {
		a := &out[i]
		signed, spec, err := job.Decode(env.Signed)
		if err != nil {
			a.refuse(wire.StatusBadRequest, "job %d: %v", i, err)
			continue
		}
		a.key = signed.Key()
		if exp := spec.Expires(); job.Expired(exp, nowMS) {
			a.refuse(wire.StatusGone, "job %s expired at %s on its project's clock", signed.CID(),
				time.UnixMilli(exp).UTC().Format(time.RFC3339))
			continue
		}
		st := env.State // kept unexpired: see Apply
		if from != nil {
			if spec.Project != from.Identity.Name {
				a.refuse(wire.StatusUnauthorized, "job %s: project %q may not submit jobs of project %q", signed.CID(), from.Identity.Name, spec.Project)
				continue
			}
			if st.Phase != job.Ready || st.IsTombstone() {
				a.refuse(wire.StatusBadRequest, "job %s: a project submits never-claimed ready jobs, not %s (client %x, start %d)",
					signed.CID(), st.Phase, st.Client, st.Start)
				continue
			}
		}
		p.mu.Lock()
		_, held := p.jobs[string(a.key)]
		der, known := p.certs[string(spec.CertRef)]
		inPool := known
		p.mu.Unlock()
		if held {
			merges = append(merges, i)
			continue
		}
		if _, _, gone := p.gone(a.key, nowMS); gone {
			a.refuse(wire.StatusGone, "job %s was collected and deleted here", signed.CID())
			continue
		}
		if !known {
			if der, known = offered[string(spec.CertRef)]; !known {
				a.refuse(wire.StatusBadRequest, "job %s: certificate of project %q not sent", signed.CID(), spec.Project)
				continue
			}
		}
		id, err := p.ep.Admission().Verifier().VerifyCert(der, now, certs.RoleProject)
		if err != nil {
			a.refuse(wire.StatusUnauthorized, "job %s: project certificate: %v", signed.CID(), err)
			continue
		}
		if id.Name != spec.Project {
			a.refuse(wire.StatusUnauthorized, "job %s: names project %q but its certificate is %q's", signed.CID(), spec.Project, id.Name)
			continue
		}
		if err := signed.Verify(id.PublicKey); err != nil {
			a.refuse(wire.StatusUnauthorized, "job %s of project %q: %v", signed.CID(), spec.Project, err)
			continue
		}
		// The listing is the index's business (index nodes verify its
		// signature); here it must only name this job truthfully.
		_, listing, err := job.DecodeListing(env.Listing)
		if err != nil {
			a.refuse(wire.StatusBadRequest, "job %s: listing: %v", signed.CID(), err)
			continue
		}
		if !listing.Matches(signed, spec) {
			a.refuse(wire.StatusBadRequest, "job %s: listing does not match the job", signed.CID())
			continue
		}
		if job.NeedsProof(st) {
			// The signed spec proves the job; its state must prove itself.
			merges = append(merges, i)
			st = job.State{}
		}
		rec := record{Signed: env.Signed, State: st, Responsible: nowMS, Listing: env.Listing}
		b, err := codec.Marshal(&rec)
		if err != nil {
			a.refuse(wire.StatusInternal, "job %s: %v", signed.CID(), err)
			continue
		}
		batch.Put(store.Key(jobNS, a.key), b)
		if !inPool {
			newCerts[string(spec.CertRef)] = der
		}
		a.isNew = true
		e := newEntry(string(a.key), spec, st, nowMS)
		v := p.view(e, nowMS)
		e.lapsed = st.Phase == job.Claimed && v.Phase != job.Claimed
		fresh = append(fresh, staged{key: string(a.key), e: e, state: v})
	}
	for ref, der := range newCerts {
		batch.Put(store.Key(certNS, []byte(ref)), der)
	}
	if batch.Len() > 0 {
		if err := batch.Commit(true); err != nil {
			for i := range out {
				if out[i].isNew {
					out[i].isNew = false
					out[i].refuse(wire.StatusInternal, "store: %v", err)
				}
			}
			fresh = nil
		}
	}
	p.mu.Lock()
	for ref, der := range newCerts {
		p.certs[ref] = der
	}
	for _, f := range fresh {
		if _, dup := p.jobs[f.key]; !dup {
			p.jobs[f.key] = f.e
		}
	}
	p.mu.Unlock()
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
	} else if len(fresh) > 0 {
		p.handOn(fresh)
	}
	var changes []change
	for _, f := range fresh {
		changes = append(changes, change{key: []byte(f.key), st: f.state})
	}
	p.notify(changes...)
	p.mStored.WithLabelValues(source).Add(float64(len(fresh)))
	return out
}
