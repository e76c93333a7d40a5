package project_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// Environment of the project process TestCrashChild runs as.
const (
	envCrashMode  = "UP_CRASH_MODE"  // "submit" or "harvest"
	envCrashPause = "UP_CRASH_PAUSE" // set: stop at the first progress report and wait for stdin
	envCrashDir   = "UP_CRASH_DIR"   // the project's data directory (keys, jobs.yaml, ledger.db)
	envCrashNodes = "UP_CRASH_NODES" // comma-separated multiaddrs of the nodes to join
)

// childReport is what a project process that ran to its end prints.
type childReport struct {
	Submit  project.SubmitReport
	Harvest project.HarvestReport
	Errors  []string
}

// TestCrashChild is the project process of TestKillProject: it runs only
// when that test starts it. It joins the nodes, opens the ledger and runs
// one submit (chunks of 5 jobs) or harvest, as `up project` does. With
// envCrashPause it prints "PAUSED done/total" at the first progress
// report (after the first chunk is in the ledger) and blocks on stdin:
// the parent kills it there, or lets it go on by writing a line.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(envCrashMode)
	if mode == "" {
		t.Skip("the project process of TestKillProject")
	}
	dir := os.Getenv(envCrashDir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := testnet.JoinProject(ctx, dir, os.Getenv(envCrashNodes))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	p.SetChunk(5)
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var progress project.Progress
	if os.Getenv(envCrashPause) != "" {
		paused := false
		progress = func(done, total int) {
			if paused {
				return
			}
			paused = true
			fmt.Printf("PAUSED %d/%d\n", done, total)
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		}
	}
	var rep childReport
	var errs []error
	switch mode {
	case "submit":
		file, err := os.ReadFile(filepath.Join(dir, "jobs.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Submit, err = p.SubmitFile(ctx, l, file, "jobs.yaml", progress); err != nil {
			t.Fatal(err)
		}
		errs = rep.Submit.Errors
	case "harvest":
		if rep.Harvest, err = p.Harvest(ctx, l, project.HarvestOptions{PageSize: 64}, progress); err != nil {
			t.Fatal(err)
		}
		errs = rep.Harvest.Errors
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	for _, e := range errs {
		rep.Errors = append(rep.Errors, e.Error())
	}
	if err := testkit.Report(rep); err != nil {
		t.Fatal(err)
	}
}

// projectProcess is a running TestCrashChild.
type projectProcess struct {
	t      *testing.T
	mode   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, closed at EOF
	stderr bytes.Buffer
}

// startProject starts the project process in mode, paused at its first
// progress report when pause is set.
func startProject(t *testing.T, mode string, pause bool, dir, addrs string) *projectProcess {
	t.Helper()
	env := []string{envCrashMode + "=" + mode, envCrashDir + "=" + dir, envCrashNodes + "=" + addrs}
	if pause {
		env = append(env, envCrashPause+"=1")
	}
	cmd := testkit.ChildCommand("TestCrashChild", env)
	pp := &projectProcess{t: t, mode: mode, cmd: cmd, lines: make(chan string, 4096)}
	cmd.Stderr = &pp.stderr
	var err error
	if pp.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a test that failed half-way leaves no process behind
		if pp.cmd.ProcessState == nil {
			_ = pp.cmd.Process.Kill()
			for range pp.lines {
			}
			_ = pp.cmd.Wait()
		}
	})
	go func() {
		defer close(pp.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			pp.lines <- sc.Text()
		}
	}()
	return pp
}

// await returns the rest of the first output line starting with prefix;
// it fails the test when the process ends or d passes first.
func (pp *projectProcess) await(prefix string, d time.Duration) string {
	pp.t.Helper()
	timeout := time.After(d)
	var seen []string
	for {
		select {
		case line, ok := <-pp.lines:
			if !ok {
				_ = pp.cmd.Wait()
				pp.t.Fatalf("project %s ended without printing %q: %v\nstdout:\n%s\nstderr:\n%s", pp.mode, prefix, pp.cmd.ProcessState, strings.Join(seen, "\n"), pp.stderr.String())
			}
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest
			}
			seen = append(seen, line)
		case <-timeout:
			_ = pp.cmd.Process.Kill()
			pp.t.Fatalf("project %s printed no %q within %s\nstdout:\n%s", pp.mode, prefix, d, strings.Join(seen, "\n"))
		}
	}
}

// kill SIGKILLs the process and checks that the signal is what ended it.
func (pp *projectProcess) kill() {
	pp.t.Helper()
	if err := pp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		pp.t.Fatalf("kill project %s: %v", pp.mode, err)
	}
	for range pp.lines { // drain to EOF, as Wait wants
	}
	err := pp.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		pp.t.Fatalf("project %s after SIGKILL: %v", pp.mode, err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		pp.t.Fatalf("project %s was not ended by SIGKILL but %v (it ran to its end before the kill)", pp.mode, err)
	}
}

// finish waits up to d for the process to run to its end and returns its
// report.
func (pp *projectProcess) finish(d time.Duration) childReport {
	pp.t.Helper()
	var rep childReport
	if err := json.Unmarshal([]byte(pp.await(testkit.ReportPrefix, d)), &rep); err != nil {
		pp.t.Fatalf("project %s report: %v", pp.mode, err)
	}
	for range pp.lines {
	}
	if err := pp.cmd.Wait(); err != nil {
		pp.t.Fatalf("project %s: %v\nstderr:\n%s", pp.mode, err, pp.stderr.String())
	}
	return rep
}

// TestKillProject: the project runs as its own process, as `up project`
// does, over TCP, and is SIGKILLed in the middle of submit and of
// harvest; re-running the command loses nothing and duplicates nothing.
//
// Submit (40 units × 2 copies, chunks of 5) is paused after its first
// chunk is acknowledged and recorded; the parent then holds the ledger's
// write lock and lets it go on, so the second chunk reaches the nodes but
// cannot be recorded, and kills it there (the window where the nodes hold
// jobs the ledger still has as only prepared). Harvest is killed after
// its first 64 results are stored and before any node is told
// "collected" or any unit is validated. After each re-run: exactly the
// ledger's 80 jobs in the network, 80 results, 80 collected, 40 units
// valid with two agreeing results each, nothing doubled.
func TestKillProject(t *testing.T) {
	const units, copies, jobs = 40, 2, 80
	ctx := context.Background()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 8, Dir: t.TempDir(), Seed: 77, Transport: testnet.TCP, PoolLoops: true,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.Limit, cfg.Claim.Burst = 1e6, 1e6 }})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	id, err := net.NewParty(certs.RoleProject, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf("app: noop\nargs: [\"{i}\"]\nkeywords: [lhc]\ncopies: %d\ncommit: false\nsweep:\n  i: {from: 1, to: %d}\n", copies, units)
	if err := os.WriteFile(filepath.Join(id.Dir, "jobs.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs := net.NodeAddrs()
	inNet := func() map[string]bool {
		seen := map[string]bool{}
		for _, nd := range net.Live() {
			for _, k := range nd.Pool().Keys() {
				c, err := cid.Cast(k)
				if err != nil {
					t.Fatal(err)
				}
				seen[c.String()] = true
			}
		}
		return seen
	}

	// Submit, paused after the first chunk.
	sub := startProject(t, "submit", true, id.Dir, addrs)
	if got := sub.await("PAUSED ", time.Minute); got != fmt.Sprintf("5/%d", jobs) {
		t.Fatalf("submit paused at %s, want 5/%d", got, jobs)
	}
	// The ledger, read (and locked) beside the project process.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(id.Dir, "ledger.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("ledger %q: %v", q, err)
		}
		return n
	}
	submitted := func() int { return count(`SELECT COUNT(*) FROM jobs WHERE state != ?`, project.StatePrepared) }
	if n, s := count(`SELECT COUNT(*) FROM jobs`), submitted(); n != jobs || s != 5 {
		t.Fatalf("paused submit: ledger holds %d jobs, %d submitted; want %d, 5", n, s, jobs)
	}
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(sub.stdin, "go on\n"); err != nil {
		t.Fatal(err)
	}
	// The second chunk reaches the nodes; its record waits for the lock.
	testkit.WaitFor(t, 8*time.Second, "the second chunk in the network", func() bool { return len(inNet()) >= 10 })
	sub.kill()
	held, recorded := len(inNet()), submitted()
	t.Logf("submit killed: the network holds %d jobs, the ledger has %d of %d submitted", held, recorded, jobs)
	if recorded != 5 || held <= recorded {
		t.Fatalf("submit killed outside the window: network %d jobs, ledger %d submitted", held, recorded)
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	lock.Close()

	// The same submit again: it sends what was not recorded, the same jobs,
	// but for those the nodes say they hold (the killed run sent them).
	rep := startProject(t, "submit", false, id.Dir, addrs).finish(time.Minute)
	t.Logf("submit re-run: %+v", rep.Submit)
	if s := rep.Submit; s.Prepared != 0 || s.Submitted+s.Already != jobs || s.Already < 5 || s.Already > held || len(rep.Errors) != 0 {
		t.Fatalf("submit re-run: %+v %v; want none prepared, %d submitted or already, 5 to %d (held) already", s, rep.Errors, jobs, held)
	}
	ledgerJobs := ledgerCIDs(t, db)
	network := inNet()
	if len(ledgerJobs) != jobs || len(network) != jobs || count(`SELECT COUNT(*) FROM jobs WHERE state = ?`, project.StateSubmitted) != jobs {
		t.Fatalf("after the re-run: ledger %d jobs (%d submitted), network %d distinct jobs; want %d each", len(ledgerJobs),
			count(`SELECT COUNT(*) FROM jobs WHERE state = ?`, project.StateSubmitted), len(network), jobs)
	}
	for _, c := range ledgerJobs {
		if !network[c] {
			t.Fatalf("job %s of the ledger is not in the network (and so another is there twice)", c)
		}
	}

	completeAll(t, net, db, id.ResultPublicKey())

	// Harvest, killed after storing its first 64 results.
	har := startProject(t, "harvest", true, id.Dir, addrs)
	if got := har.await("PAUSED ", time.Minute); got != fmt.Sprintf("64/%d", jobs) {
		t.Fatalf("harvest paused at %s, want 64/%d", got, jobs)
	}
	har.kill()
	results, stored, told := count(`SELECT COUNT(*) FROM results`), count(`SELECT COUNT(*) FROM jobs WHERE state = ?`, project.StateHarvested),
		collectedInNet(net, ledgerJobs)
	t.Logf("harvest killed: %d results stored, %d harvested not collected, %d jobs collected on some node, %d units valid", results, stored, told,
		count(`SELECT COUNT(*) FROM units WHERE status = ?`, project.UnitValid))
	if results != 64 || stored != 64 || told != 0 {
		t.Fatalf("harvest killed outside the window: %d results, %d harvested, %d told collected", results, stored, told)
	}

	// The same harvest again finishes the job.
	rep = startProject(t, "harvest", false, id.Dir, addrs).finish(time.Minute)
	t.Logf("harvest re-run: %+v", rep.Harvest)
	if h := rep.Harvest; h.Recorded != jobs-64 || h.Collected != jobs || h.Decided != units || h.Refused != 0 || h.Extra != 0 || len(rep.Errors) != 0 {
		t.Fatalf("harvest re-run: %+v %v; want %d recorded, %d collected, %d units decided", h, rep.Errors, jobs-64, jobs, units)
	}
	check := func(when string) {
		t.Helper()
		for q, want := range map[string]int{
			`SELECT COUNT(*) FROM jobs`:                                                      jobs,
			`SELECT COUNT(*) FROM results`:                                                   jobs,
			`SELECT COUNT(*) FROM results r JOIN jobs j ON j.id = r.job`:                     jobs,
			`SELECT COUNT(*) FROM jobs WHERE state = 'collected'`:                            jobs,
			`SELECT COUNT(*) FROM units WHERE status = 'valid'`:                              units,
			`SELECT COUNT(*) FROM results WHERE valid = 1`:                                   jobs,
			`SELECT COUNT(DISTINCT client) FROM results`:                                     copies,
			`SELECT COUNT(*) FROM units u JOIN results r ON r.cid = u.canonical`:             units,
			`SELECT COUNT(*) FROM (SELECT unit FROM jobs GROUP BY unit HAVING COUNT(*) = 2)`: units,
		} {
			if got := count(q); got != want {
				t.Errorf("%s: %s = %d, want %d", when, q, got, want)
			}
		}
		if n := collectedInNet(net, ledgerJobs); n != jobs {
			t.Errorf("%s: %d of %d jobs collected on their nodes", when, n, jobs)
		}
		if n := len(inNet()); n > jobs {
			t.Errorf("%s: the network holds %d jobs, more than the %d submitted", when, n, jobs)
		}
	}
	check("after the harvest re-run")
	if t.Failed() {
		t.FailNow()
	}
	// Once more: nothing new, nothing doubled.
	rep = startProject(t, "harvest", false, id.Dir, addrs).finish(time.Minute)
	if h := rep.Harvest; h.Recorded != 0 || h.Decided != 0 || h.Extra != 0 || len(rep.Errors) != 0 {
		t.Fatalf("third harvest: %+v %v; want nothing new", h, rep.Errors)
	}
	check("after a third harvest")
}

// completeAll finishes every job of the ledger as two clients would: w0
// does copy 0 of each unit and w1 copy 1, both returning the same output
// for a unit, so each unit has a quorum.
func completeAll(t *testing.T, net *testnet.Network, db *sql.DB, projectKey []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var workers []*claimclient.Claimer
	var keys []*keystore.Identity
	for i := range 2 {
		a, err := net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("w%d", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		workers = append(workers, claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0))
		keys = append(keys, a.Identity())
	}
	rows, err := db.Query(`SELECT j.cid, j.copy, s.signed FROM jobs j JOIN specs s ON s.job = j.id ORDER BY j.cid`)
	if err != nil {
		t.Fatal(err)
	}
	type todo struct {
		cid    string
		copy   int
		signed []byte
	}
	var all []todo
	for rows.Next() {
		var j todo
		if err := rows.Scan(&j.cid, &j.copy, &j.signed); err != nil {
			t.Fatal(err)
		}
		all = append(all, j)
	}
	rows.Close()
	for _, j := range all {
		c, err := cid.Decode(j.cid)
		if err != nil {
			t.Fatal(err)
		}
		_, spec, err := job.Decode(j.signed)
		if err != nil {
			t.Fatal(err)
		}
		w, me := workers[j.copy], keys[j.copy]
		place := net.PlaceOf(c.Bytes())
		claim, err := w.ClaimAt(ctx, c.Bytes(), place, net.TrueClosest(place, 5))
		if err != nil {
			t.Fatalf("job %s: claim: %v", j.cid, err)
		}
		env, err := result.Seal(result.Inner{Job: c.Bytes(), ClientCert: me.Cert.Raw, Output: []byte("ok " + strings.Join(spec.Args, " ")), At: time.Now().UnixMilli()},
			me.Key, projectKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := w.SubmitResult(ctx, claim, env.Encode()); err != nil || n == 0 {
			t.Fatalf("job %s: result stored on %d nodes: %v", j.cid, n, err)
		}
	}
	net.FlushAll(ctx)
}

// collectedInNet counts the jobs some node holds as collected.
func collectedInNet(net *testnet.Network, cids []string) int {
	n := 0
	for _, s := range cids {
		c, err := cid.Decode(s)
		if err != nil {
			continue
		}
		for _, nd := range net.Live() {
			if st, ok := nd.Pool().State(c.Bytes()); ok && st.Phase == job.Collected {
				n++
				break
			}
		}
	}
	return n
}
