package testnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// benchUnitsKept bounds a bench worker's units run, as client.Client
// bounds its own (client/process.go), so a long run's memory stays flat.
const benchUnitsKept = 100000

// benchWorker is one in-process client: the cycle of client.Client
// (client/process.go) with the application called directly.
type benchWorker struct {
	a       *agent.Agent
	claimer *claimclient.Claimer
	query   string

	mu    sync.Mutex
	units map[string]bool

	runs, empty, released atomic.Int64
	firstErr              atomic.Pointer[error]

	claimErrs map[string]int // claims that failed, by "job <last 4 bytes hex>: error" (at most 4,096; guarded by mu)
}

func (w *benchWorker) fail(err error) {
	w.firstErr.CompareAndSwap(nil, &err)
}

func (w *benchWorker) loop(ctx context.Context, claimed func(time.Duration)) {
	wait := time.Duration(0)
	for ctx.Err() == nil {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		hits, err := w.a.Index().Find(ctx, w.query, 1)
		if err != nil {
			if errors.Is(err, indexclient.ErrNoJob) {
				w.empty.Add(1)
			} else if ctx.Err() == nil {
				w.fail(fmt.Errorf("find: %w", err))
			}
			wait = min(max(2*wait, 10*time.Millisecond), 200*time.Millisecond)
			continue
		}
		wait = 0
		for _, h := range hits {
			hint := make([]peer.ID, 0, len(h.Replicas))
			for _, r := range h.Replicas {
				hint = append(hint, peer.ID(r))
			}
			t := time.Now()
			cl, err := w.claimer.ClaimAt(ctx, h.Job, hint)
			if err != nil {
				w.mu.Lock()
				if w.claimErrs == nil {
					w.claimErrs = map[string]int{}
				}
				if len(w.claimErrs) < 4096 {
					w.claimErrs[fmt.Sprintf("job %x: %v", h.Job[len(h.Job)-4:], err)]++
				}
				w.mu.Unlock()
				continue
			}
			claimed(time.Since(t))
			if err := w.process(ctx, cl); err != nil && ctx.Err() == nil {
				w.fail(err)
			}
		}
	}
}

// process fetches and verifies the spec, runs the application in this
// process, seals the result to the project and sends it to the claim's
// nodes; it releases the claim when it cannot.
func (w *benchWorker) process(ctx context.Context, cl *claimclient.Claim) (err error) {
	done := false
	defer func() {
		if !done {
			w.claimer.Release(context.WithoutCancel(ctx), cl)
		}
	}()
	signed, spec, err := w.fetchSpec(ctx, cl)
	if err != nil {
		return err
	}
	unit := fmt.Sprintf("%q %q %q", spec.Project, spec.App, spec.Args)
	w.mu.Lock()
	seen := w.units[unit]
	if !seen && len(w.units) >= benchUnitsKept {
		clear(w.units) // as client.Client: older units' copies are long placed
	}
	w.units[unit] = true
	w.mu.Unlock()
	if seen {
		w.released.Add(1)
		return nil // another copy must come from another client
	}
	defer func() {
		if !done { // not run after all: another copy may run here
			w.mu.Lock()
			delete(w.units, unit)
			w.mu.Unlock()
		}
	}()
	app, ok := apps.Lookup(spec.App)
	if !ok || spec.App != BenchApp {
		return fmt.Errorf("job %s: application %q not allowed", signed.CID(), spec.App)
	}
	start := time.Now()
	var out bytes.Buffer
	exit := int32(0)
	if err := app.Main(spec.Args, &out, ""); err != nil {
		exit = 1
	}
	id := w.a.Identity()
	inner := result.Inner{Job: signed.Key(), ClientCert: id.Cert.Raw, Output: out.Bytes(), ExitCode: exit,
		Wall: time.Since(start).Milliseconds(), At: w.a.Now().UnixMilli()}
	env, err := result.Seal(inner, id.Key, spec.ResultKey, nil)
	if err != nil {
		return err
	}
	if _, err := w.claimer.SubmitResult(ctx, cl, env.Encode()); err != nil {
		return err
	}
	done = true
	w.runs.Add(1)
	return nil
}

// fetchSpec is client.Client's: the signed spec from one of the job's
// nodes, the project's certificate and signature checked.
func (w *benchWorker) fetchSpec(ctx context.Context, cl *claimclient.Claim) (*job.Signed, *job.Spec, error) {
	var errs []error
	for _, n := range cl.Nodes {
		var resp wire.GetResponse
		if err := w.a.Endpoint().Call(ctx, n, wire.ProtoJobGet, &wire.GetRequest{Keys: [][]byte{cl.Job}}, wire.MaxJobFrame, &resp); err != nil {
			errs = append(errs, err)
			continue
		}
		if len(resp.Jobs) != 1 {
			errs = append(errs, fmt.Errorf("node %s does not hold the job", n))
			continue
		}
		s, spec, err := job.Decode(resp.Jobs[0].Signed)
		if err != nil || string(s.Key()) != string(cl.Job) {
			errs = append(errs, fmt.Errorf("node %s sent another or a bad job", n))
			continue
		}
		v := w.a.Endpoint().Admission().Verifier()
		for _, der := range resp.Certs {
			if string(job.CertRef(der)) != string(spec.CertRef) {
				continue
			}
			pid, err := v.VerifyCert(der, w.a.Now(), certs.RoleProject)
			if err != nil {
				return nil, nil, err
			}
			if pid.Name != spec.Project {
				return nil, nil, fmt.Errorf("job %s names project %q, signed by %q", s.CID(), spec.Project, pid.Name)
			}
			if err := s.Verify(pid.PublicKey); err != nil {
				return nil, nil, err
			}
			return s, spec, nil
		}
		errs = append(errs, fmt.Errorf("job %s: no certificate of project %q sent", s.CID(), spec.Project))
	}
	return nil, nil, fmt.Errorf("job %x: spec from none of its nodes: %w", cl.Job, errors.Join(errs...))
}
