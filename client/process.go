package client

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/wire"
)

// ErrSameUnit reports a claimed job that is a redundant copy of a unit
// this client already ran; it is released for another client.
var ErrSameUnit = errors.New("copy of a unit already run by this client")

// ErrNotAllowed reports a claimed job whose application the volunteer did
// not allow: it is released, not run.
var ErrNotAllowed = errors.New("application not allowed")

// RunOne does one cycle for a project: claim one of the entries served
// earlier and not yet tried (or due for another try), else find jobs, and
// run the job claimed (trying the next entry when a claim fails) and
// submit its result. ran reports whether a job was claimed.
//
// Before its claim, a job is vetted from its spec (see vet): a copy of a
// unit this client ran, or an application it does not allow, is skipped
// unclaimed, and the next queries pass it over and decline it at the
// index node that served it, which offers it to other clients at once.
// The cycle then finds again, up to findRounds times.
//
// An index node holds an entry it served back from other clients for the
// quarantine (2 min), so the entries of a batch left untried, and those
// whose claim failed for want of answers (a node of the job down or
// restarting), are kept and tried again (after 5 s, 10 s) rather than
// left hidden from everyone.
func (c *Client) RunOne(ctx context.Context, project string) (ran bool, err error) {
	if w := c.takeClaimed(project); w != nil { // claimed beside another job of its place
		err := c.process(ctx, project, w.cl, w.v)
		if isSkip(err) {
			c.skip(project, w.cl.Job, "", "", skipReason(err))
		}
		return true, err
	}
	for round := 0; ; round++ {
		hits := c.duePending(project)
		if len(hits) == 0 {
			if hits, err = c.find(ctx, project); err != nil {
				return false, err
			}
		}
		claimed, skips, err := c.tryHits(ctx, project, hits)
		if claimed != nil {
			err := c.process(ctx, project, claimed.cl, claimed.v)
			if isSkip(err) { // claimed unvetted, released: pass it over from now on
				c.skip(project, claimed.cl.Job, "", "", skipReason(err))
			}
			return true, err
		}
		if err != nil {
			return false, err
		}
		// Every entry was taken (find others at once), or skipped: find
		// again, passing them over, at least to deliver the declines.
		if skips == 0 || (round >= findRounds && !c.hasDeclines(project)) || round >= 4*findRounds {
			return false, nil
		}
	}
}

// findRounds bounds the queries of a cycle whose entries were all skipped.
const findRounds = 4

// won is a claim won in tryHits, with its vetting (nil: unvetted).
type won struct {
	cl *claimclient.Claim
	v  *vetted
}

// tryHits vets the entries and claims the first one the client runs; the
// rest are kept for the next cycles. skips counts the entries skipped.
func (c *Client) tryHits(ctx context.Context, project string, hits []pendingHit) (w *won, skips int, err error) {
	for i, ph := range hits {
		h := ph.hit
		v, err := c.vet(ctx, project, h)
		if isSkip(err) {
			unit := ""
			if v != nil {
				unit = v.unit
			}
			c.skip(project, h.Job, unit, ph.from, skipReason(err))
			c.noteSkip(project, h.Job, err)
			c.log.Debug("job skipped", "job", jobName(h.Job), "project", project, "err", err)
			skips++
			continue
		}
		if err != nil {
			return nil, skips, err
		}
		if bound := c.groupBound(project, specOf(v)); bound > 1 {
			w, more, err := c.tryPlace(ctx, project, ph, v, hits[i+1:], bound)
			return w, skips + more, err
		}
		cl, err := c.claimHit(ctx, project, ph, placeOf(h, v))
		c.noteClaim(project, h.Job, err)
		if err != nil {
			if v != nil {
				c.forgetUnit(v.unit) // not run here: another copy may be
			}
			if errors.Is(err, errRateLimited) || errors.Is(err, errStopping) {
				c.addPending(ph)
				return nil, skips, err
			}
			if errors.Is(err, claimclient.ErrOverQuota) {
				// Every other entry would be refused too: keep them all for
				// this client's next try, once a job it holds ends (the index
				// node holds them back from others for its quarantine).
				for _, rest := range hits[i:] {
					c.addPending(rest)
				}
				return nil, skips, err
			}
			continue
		}
		for _, rest := range hits[i+1:] {
			c.addPending(rest)
		}
		return &won{cl: cl, v: v}, skips, nil
	}
	return nil, skips, nil
}

// errRateLimited reports a node that refused this client for its rate.
var errRateLimited = errors.New("rate limited by a node")

// placeOf is the place key of an entry's job: from its spec when it was
// vetted (the project's signature covers it), else as the entry says
// (an index node that lies about it sends the claim to nodes that do not
// hold the job: the claim fails, nothing else).
func placeOf(h wire.IndexHit, v *vetted) []byte {
	if v != nil && v.signed != nil {
		if place, err := v.signed.PlaceKey(); err == nil {
			return place
		}
	}
	return job.PlaceKey(h.Job, h.Place)
}

// pendingHit is an index entry served to this client and not claimed yet.
type pendingHit struct {
	project   string
	hit       wire.IndexHit
	since     time.Time // when it was served (its quarantine began)
	tries     int       // claims that failed for want of answers
	notBefore time.Time
	from      peer.ID // the index node that served it ("": unknown)
}

// Bounds of the pending entries: a claim is tried pendingTries times at
// most, pendingRetry apart and doubling; an entry is kept no longer than
// pendingMaxAge (its quarantine is over: others see it again), and at
// most pendingMax are kept.
const (
	pendingTries  = 3
	pendingRetry  = 5 * time.Second
	pendingMaxAge = 2 * time.Minute
	pendingMax    = 64
)

func (c *Client) addPending(ph pendingHit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) < pendingMax {
		c.pending = append(c.pending, ph)
	}
}

// duePending takes the project's pending entries due for a try, oldest
// first, and drops those past pendingMaxAge.
func (c *Client) duePending(project string) []pendingHit {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var due []pendingHit
	keep := c.pending[:0]
	for _, ph := range c.pending {
		switch {
		case now.Sub(ph.since) >= pendingMaxAge:
		case ph.project == project && !now.Before(ph.notBefore):
			due = append(due, ph)
		default:
			keep = append(keep, ph)
		}
	}
	clear(c.pending[len(keep):])
	c.pending = keep
	return due
}

// process runs a claimed job to its submitted result, releasing the claim
// if it cannot, unless a replica stored the result (the submit fell short
// of a majority: that replica hands the finished state on).
func (c *Client) process(ctx context.Context, project string, cl *claimclient.Claim, v *vetted) (err error) {
	defer c.begin(&ctx, project, cl, &err)()
	cid := jobName(cl.Job)
	c.track(cid, project, "claimed")
	defer c.untrack(cid)
	submitted := false
	unit := ""             // set once the job's unit is marked as run here
	step := wire.SkipFetch // the reason of a release in the step under way
	defer func() {
		if !submitted {
			c.leaveGroup(ctx, cl.Job) // its group's results do not wait for it
			if unit != "" {
				// Not run after all: another copy of the unit may run here.
				c.forgetUnit(unit)
			}
			c.claimer.Release(context.WithoutCancel(ctx), cl, releaseReason(ctx, err, step))
			c.log.Info("job released", "job", cid, "project", project, "err", err)
			c.mu.Lock()
			c.released++
			if !errors.Is(err, ErrSameUnit) && !errors.Is(err, ErrDeadline) {
				c.failed++
			}
			c.mu.Unlock()
		}
	}()
	c.track(cid, project, "fetching")
	var signed *job.Signed
	var spec *job.Spec
	if v != nil {
		signed, spec, unit = v.signed, v.spec, v.unit
	} else if signed, spec, unit, err = c.fetchChecked(ctx, project, cl); err != nil {
		return err
	}
	c.setApp(cid, spec.App)
	inputs, module, err := c.fetchAssets(ctx, spec)
	if err != nil {
		return fmt.Errorf("job %s: %w", cid, err)
	}
	c.track(cid, project, "running")
	step = wire.SkipFailed
	started := c.cfg.Now()
	out, runErr := c.run(ctx, cl, signed, spec, inputs, module)
	if runErr != nil {
		return fmt.Errorf("job %s: %w", cid, runErr)
	}
	c.track(cid, project, "submitting")
	step = wire.SkipUnknown
	id := c.cfg.Agent.Identity()
	inner := result.Inner{
		Job: signed.Key(), ClientCert: id.Cert.Raw, Output: resultOutput(spec, out), ExitCode: int32(out.ExitCode),
		Error: describe(out), CPU: out.CPU.Milliseconds(), Wall: out.Wall.Milliseconds(), At: c.cfg.Now().UnixMilli(),
	}
	if spec.UsesCommit() {
		c.track(cid, project, "committing")
		if inner.Salt, err = c.commit(ctx, cl, signed, spec, inner.Output); err != nil {
			return fmt.Errorf("job %s: %w", cid, err)
		}
	}
	env, err := c.sealResult(inner, id.Key, spec.ResultKey)
	if err != nil {
		return fmt.Errorf("job %s: %w", cid, err)
	}
	if stored, err := c.deliver(ctx, cl, env); err != nil {
		// Short of a majority: a replica that stored it hands the finished
		// state on, so the claim is not released (not counted done either).
		if stored > 0 {
			submitted = true
			c.mu.Lock()
			c.failed++
			c.mu.Unlock()
		}
		return fmt.Errorf("job %s: %w", cid, err)
	}
	submitted = true
	c.mu.Lock()
	c.done++
	_ = c.sched.Charge(project, max(out.CPU, c.cfg.Now().Sub(started)/100, time.Millisecond))
	c.mu.Unlock()
	c.log.Info("job done", "job", cid, "project", project, "app", spec.App, "exit", out.ExitCode,
		"killed", out.Killed, "cpu", out.CPU, "wall", out.Wall)
	return nil
}

// fetchAssets fetches what a job's spec names to run it: its input
// files and its WebAssembly module.
func (c *Client) fetchAssets(ctx context.Context, spec *job.Spec) (map[string]string, string, error) {
	inputs, err := c.fetchInputs(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	module, err := c.fetchModule(ctx, spec)
	return inputs, module, err
}

// fetchChecked fetches a claimed job's spec that was not vetted before
// the claim, and checks what vet checks, marking its unit as run here.
func (c *Client) fetchChecked(ctx context.Context, project string, cl *claimclient.Claim) (*job.Signed, *job.Spec, string, error) {
	cid := jobName(cl.Job)
	signed, spec, err := c.fetchSpec(ctx, cl)
	if err != nil {
		return nil, nil, "", err
	}
	if spec.Project != project {
		return nil, nil, "", fmt.Errorf("job %s is of project %q, asked %q", cid, spec.Project, project)
	}
	seen, key := c.seenUnit(spec)
	if seen {
		// Another copy of a unit this client ran: a redundant copy must come
		// from another client to count, so leave it to them.
		c.log.Debug("job released: a copy of a unit already run here", "job", cid)
		return nil, nil, "", fmt.Errorf("job %s: %w", cid, ErrSameUnit)
	}
	if err := c.refusal(cid, spec); err != nil {
		c.forgetUnit(key)
		c.log.Warn("job released: not run here", "job", cid, "project", spec.Project, "app", spec.App, "err", err)
		return nil, nil, "", err
	}
	if err := c.feasible(cid, spec); err != nil {
		c.forgetUnit(key)
		c.log.Info("job released: cannot finish in time", "job", cid, "project", spec.Project, "app", spec.App, "err", err)
		return nil, nil, "", err
	}
	return signed, spec, key, nil
}

// limits are a job's wall-clock and CPU-time limits, from its T_finish in
// ms and the client's MaxCPU (0: none): the wall-clock limit is 90 % of
// T_finish, leaving the rest to submit the result before the claim
// lapses; the CPU limit is the wall-clock limit (one slot is one CPU),
// lowered to maxCPU when that is set.
func limits(tFinishMS int64, maxCPU time.Duration) (wall, cpu time.Duration) {
	wall = time.Duration(tFinishMS) * time.Millisecond * 9 / 10
	cpu = wall
	if maxCPU > 0 {
		cpu = min(cpu, maxCPU)
	}
	return wall, cpu
}

// jobName is a job key as logs show it: its CID, or hex when it does not
// parse.
func jobName(key []byte) string {
	if k, err := job.ParseKey(key); err == nil {
		return k.String()
	}
	return fmt.Sprintf("%x", key)
}

// jobMemory is the address-space limit of a job on a machine with mem
// bytes: the machine's memory plus 2 GiB for the Go runtime's reservations
// (a built-in maps over 1 GB at start), none when unknown.
func jobMemory(mem int64) int64 {
	if mem <= 0 {
		return 0
	}
	return mem + 2<<30
}

// describe is the error text of an outcome: why it was killed, or the end
// of its stderr when it failed.
func describe(out runner.Outcome) string {
	switch {
	case out.Killed != "":
		return result.KilledPrefix + out.Killed
	case out.ExitCode != 0:
		return fmt.Sprintf("exit code %d: %s", out.ExitCode, out.Stderr)
	}
	return ""
}

// fetchSpec gets the job's signed spec from one of its nodes and checks
// the project's signature and certificate.
func (c *Client) fetchSpec(ctx context.Context, cl *claimclient.Claim) (*job.Signed, *job.Spec, error) {
	return fetchSpec(ctx, c.cfg.Agent, c.cfg.Now(), cl.Job, cl.Nodes, c.sigs)
}

// FetchSpec gets a job's signed spec from the first of nodes that sends
// it, and checks the project's certificate (valid at now) and signature:
// what a client reads of a job it claimed.
func FetchSpec(ctx context.Context, a *agent.Agent, now time.Time, key []byte, nodes []peer.ID) (*job.Signed, *job.Spec, error) {
	return fetchSpec(ctx, a, now, key, nodes, nil)
}

// fetchSpec is FetchSpec remembering valid signatures in once (nil: none).
func fetchSpec(ctx context.Context, a *agent.Agent, now time.Time, key []byte, nodes []peer.ID, once *sigverify.Once) (*job.Signed, *job.Spec, error) {
	var errs []error
	for _, n := range nodes {
		s, spec, err := getSpec(ctx, a, now, n, key, once)
		if err == nil {
			return s, spec, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, fmt.Errorf("job %x: spec from none of its nodes: %w", key, errors.Join(errs...))
}

// getSpec gets a job's signed spec from node n and checks it (getSpecs).
func getSpec(ctx context.Context, a *agent.Agent, now time.Time, n peer.ID, key []byte, once *sigverify.Once) (*job.Signed, *job.Spec, error) {
	got, err := getSpecs(ctx, a, now, n, [][]byte{key}, once)
	if err != nil {
		return nil, nil, err
	}
	g, ok := got[string(key)]
	if !ok {
		return nil, nil, fmt.Errorf("node %s does not hold the job", n)
	}
	return g.signed, g.spec, g.err
}

// gotSpec is a job's spec as a node sent it: checked, or why not.
type gotSpec struct {
	signed *job.Signed
	spec   *job.Spec
	err    error
}

// getSpecs gets the signed specs of jobs keys (at most
// wire.MaxJobsPerStore) from node n in one request and checks each: the
// project's certificate, valid at now and naming the spec's project, and
// its signature (a batch's root verified once, remembered in once; nil:
// every time). It returns, by job key, what n sent of those asked; a
// spec that fails its checks is there with its error.
func getSpecs(ctx context.Context, a *agent.Agent, now time.Time, n peer.ID, keys [][]byte, once *sigverify.Once) (map[string]gotSpec, error) {
	var resp wire.GetResponse
	if err := a.Endpoint().Call(ctx, n, wire.ProtoJobGet, &wire.GetRequest{Keys: keys}, wire.MaxJobFrame, &resp); err != nil {
		return nil, err
	}
	asked := make(map[string]bool, len(keys))
	for _, k := range keys {
		asked[string(k)] = true
	}
	v := a.Endpoint().Admission().Verifier()
	projects := map[string]*certs.Identity{} // by CertRef: the certificates sent, verified
	got := make(map[string]gotSpec, len(resp.Jobs))
	for _, je := range resp.Jobs {
		s, spec, err := job.Decode(je.Signed)
		if err != nil {
			continue
		}
		key := string(s.Key())
		if !asked[key] {
			continue // another job than asked: not taken
		}
		got[key] = gotSpec{signed: s, spec: spec, err: checkSpec(s, spec, resp.Certs, projects, v, now, once)}
	}
	return got, nil
}

// checkSpec checks a spec's project certificate among those sent (each
// verified once, kept in projects) and its signature.
func checkSpec(s *job.Signed, spec *job.Spec, sent [][]byte, projects map[string]*certs.Identity, v *certs.Verifier, now time.Time, once *sigverify.Once) error {
	id, ok := projects[string(spec.CertRef)]
	if !ok {
		for _, der := range sent {
			if string(job.CertRef(der)) != string(spec.CertRef) {
				continue
			}
			var err error
			if id, err = v.VerifyCert(der, now, certs.RoleProject); err != nil {
				return fmt.Errorf("job %s: project certificate: %w", s.CID(), err)
			}
			projects[string(spec.CertRef)] = id
			break
		}
	}
	if id == nil {
		return fmt.Errorf("job %s: no certificate of project %q sent", s.CID(), spec.Project)
	}
	if id.Name != spec.Project {
		return fmt.Errorf("job %s names project %q, signed by %q", s.CID(), spec.Project, id.Name)
	}
	if err := s.VerifyOnce(id.PublicKey, once); err != nil {
		return fmt.Errorf("job %s: %w", s.CID(), err)
	}
	return nil
}

// fetchInputs gets the job's inputs: those by URL downloaded into the
// cache (once per digest) and checked against their sha256, blobs through
// Blobs. Input i is "input<i>" in the work dir.
func (c *Client) fetchInputs(ctx context.Context, spec *job.Spec) (map[string]string, error) {
	if len(spec.Inputs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for i, in := range spec.Inputs {
		name := fmt.Sprintf("input%d", i)
		if len(in.Blob) > 0 {
			path, err := c.fetchBlobInput(ctx, spec, i)
			if err != nil {
				return nil, err
			}
			out[name] = path
			continue
		}
		if c.cfg.InputDir == "" {
			return nil, errors.New("job has inputs but the client has no input directory")
		}
		path := filepath.Join(c.cfg.InputDir, fmt.Sprintf("%x", in.SHA256))
		if _, err := os.Stat(path); err != nil {
			if err := c.download(ctx, in, path); err != nil {
				return nil, fmt.Errorf("input %d (%s): %w", i, in.URL, err)
			}
		}
		out[name] = path
	}
	return out, nil
}

func (c *Client) download(ctx context.Context, in job.Input, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL, nil)
	if err != nil {
		return err
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	if err := os.MkdirAll(c.cfg.InputDir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.cfg.InputDir, ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, c.cfg.MaxInput+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n > c.cfg.MaxInput {
		return fmt.Errorf("larger than %d bytes", c.cfg.MaxInput)
	}
	if string(h.Sum(nil)) != string(in.SHA256) {
		return fmt.Errorf("sha256 %x, want %x", h.Sum(nil), in.SHA256)
	}
	return os.Rename(f.Name(), path)
}

// seenUnit reports whether this client ran a copy of the same unit (same
// project, application, arguments and inputs) before, or runs one now,
// and remembers it under the returned key.
func (c *Client) seenUnit(spec *job.Spec) (bool, string) {
	key := spec.UnitKey()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.units.Has([32]byte(key)) {
		return true, string(key)
	}
	c.units.Add([32]byte(key))
	return false, string(key)
}

// unitsRemembered is how many units a client remembers running (seenUnit):
// the latest 16,384 to 32,768 (recent.Set), weeks of a volunteer's work,
// ~1.5 MiB. It is a first line only: the project credits one copy of a
// unit per client.
const unitsRemembered = 1 << 15

// verifiedRemembered bounds the project signatures a client remembers
// verified (sigverify.Once: a batch's root, which each of its specs
// carries, is verified once).
const verifiedRemembered = 4096

// forgetUnit undoes seenUnit's mark for a copy that did not run to a
// submitted result, so a later copy of the unit may run here: otherwise,
// with as many clients as copies, a unit whose run failed once would never
// be completed. The copies of the unit it skipped are its to take again.
func (c *Client) forgetUnit(key string) {
	c.mu.Lock()
	if len(key) == len([32]byte{}) {
		c.units.Delete([32]byte([]byte(key)))
	}
	c.mu.Unlock()
	c.unskipUnit(key)
}
