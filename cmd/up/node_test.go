package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/up-pool/up/node"
)

// lines collects a child's output stream line by line and signals the
// first line matching each awaited pattern.
type lines struct {
	mu  sync.Mutex
	all []string
	got chan string
	re  *regexp.Regexp
}

func watch(r io.Reader, re *regexp.Regexp) *lines {
	l := &lines{got: make(chan string, 1), re: re}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case l.got <- m[len(m)-1]:
				default:
				}
			}
		}
		close(l.got)
	}()
	return l
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// await returns the first match, or fails the test after d.
func (l *lines) await(t *testing.T, d time.Duration, what string) string {
	t.Helper()
	select {
	case m, ok := <-l.got:
		if !ok {
			t.Fatalf("output ended before %s: %s", what, l)
		}
		return m
	case <-time.After(d):
		t.Fatalf("no %s after %s: %s", what, d, l)
	}
	return ""
}

// TestNodeRunStopsOnSIGTERM: 'up node run' in a process of its own serves
// its HTTP API ('up node status' reads it) and, on SIGTERM, logs "node
// stopped" and exits 0 within seconds.
func TestNodeRunStopsOnSIGTERM(t *testing.T) {
	f := newFixture(t)
	cmd := upCommand("node", "run", "--data", f.n1, "--listen", "/ip4/127.0.0.1/tcp/0", "--http", "127.0.0.1:0")
	// io.Pipes rather than cmd's own: Wait then returns only once all the
	// output has been copied.
	stdout, outW := io.Pipe()
	stderr, errW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, errW
	out := watch(stdout, regexp.MustCompile(`^listening on (\S+)`))
	logs := watch(stderr, regexp.MustCompile(`msg="HTTP API listening".* addr=(\S+)`))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // if the test fails first
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		outW.Close()
		errW.Close()
		done <- err
	}()

	out.await(t, 30*time.Second, `"listening on" line`)
	httpAddr := logs.await(t, 5*time.Second, "HTTP API address in the log")
	var st node.Status
	if err := json.Unmarshal([]byte(mustRun(t, "node", "status", "--json", "--http", httpAddr)), &st); err != nil {
		t.Fatal(err)
	}
	if st.Name != "n1" || st.PeerID == "" {
		t.Fatalf("status %+v", st)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr: %s", err, logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGTERM; stderr: %s", logs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to stop", d)
	}
	for range logs.got { // drained: the pipe is closed, every line read
	}
	if s := logs.String(); !strings.Contains(s, `msg="node stopped"`) || strings.Contains(s, "level=ERROR") {
		t.Fatalf("stderr after SIGTERM: %s", s)
	}
}

// TestNodeRunLookupCacheFlag: --lookup-cache sets the cache TTL, and 0
// turns the cache off (DisableLookupCache: the DHT config's zero TTL
// means the 90 s default).
func TestNodeRunLookupCacheFlag(t *testing.T) {
	for _, c := range []struct {
		flag time.Duration
		want time.Duration
		off  bool
	}{{30 * time.Second, 30 * time.Second, false}, {0, 0, true}} {
		fl := nodeRunFlags{data: "d", logLevel: "info", logFormat: "text", r: 5, cacheTTL: c.flag}
		cfg, err := fl.config(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.DHT.LookupCacheTTL != c.want || cfg.DHT.DisableLookupCache != c.off {
			t.Errorf("--lookup-cache %s: TTL %s, off %v; want %s, %v", c.flag, cfg.DHT.LookupCacheTTL, cfg.DHT.DisableLookupCache, c.want, c.off)
		}
	}
}

// TestNodeRunBalanceFlags: the load-balancing flags reach the node's
// config, zero keeps the defaults, and out-of-range values are usage
// errors naming the flag.
func TestNodeRunBalanceFlags(t *testing.T) {
	base := nodeRunFlags{data: "d", logLevel: "info", logFormat: "text", r: 5}
	fl := base
	fl.capacity, fl.balance, fl.maxGrindBits, fl.noBalance = 2.5, 2*time.Minute, 20, true
	cfg, err := fl.config(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Balance.Capacity != 2.5 || cfg.Balance.Interval != 2*time.Minute || cfg.Balance.MaxGrindBits != 20 || !cfg.Balance.Off {
		t.Fatalf("balance config %+v", cfg.Balance)
	}
	if cfg, err = base.config(io.Discard); err != nil || cfg.Balance.Capacity != 0 || cfg.Balance.Interval != 0 || cfg.Balance.MaxGrindBits != 0 {
		t.Fatalf("defaults: %+v, %v", cfg.Balance, err)
	}
	for _, bad := range []struct {
		edit func(*nodeRunFlags)
		flag string
	}{
		{func(f *nodeRunFlags) { f.capacity = -1 }, "--capacity"},
		{func(f *nodeRunFlags) { f.maxGrindBits = 41 }, "--max-grind-bits"},
		{func(f *nodeRunFlags) { f.balance = -time.Second }, "--balance-interval"}, // --no-balance is the only off
		{func(f *nodeRunFlags) { f.balance = time.Microsecond }, "--balance-interval"},
	} {
		f := base
		bad.edit(&f)
		_, err := f.config(io.Discard)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad.flag) {
			t.Fatalf("%s: %v, want a usage error naming the flag", bad.flag, err)
		}
	}
}

// TestNodeRunStoreSyncFlag: --store-sync sets the group-sync interval, 0
// syncs every write, and a negative value is a usage error naming it.
func TestNodeRunStoreSyncFlag(t *testing.T) {
	for _, c := range []struct {
		flag time.Duration
		want time.Duration
		each bool
	}{{100 * time.Millisecond, 100 * time.Millisecond, false}, {0, 0, true}} {
		fl := nodeRunFlags{data: "d", logLevel: "info", logFormat: "text", r: 5, storeSync: c.flag}
		cfg, err := fl.config(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.StoreSyncInterval != c.want || cfg.StoreSyncEachWrite != c.each {
			t.Errorf("--store-sync %s: interval %s, each write %v; want %s, %v", c.flag, cfg.StoreSyncInterval, cfg.StoreSyncEachWrite, c.want, c.each)
		}
	}
	fl := nodeRunFlags{data: "d", logLevel: "info", logFormat: "text", r: 5, storeSync: -time.Second}
	_, err := fl.config(io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--store-sync") {
		t.Fatalf("--store-sync -1s: %v, want a usage error naming the flag", err)
	}
}
