package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/project"
	"github.com/up-pool/up/web"
)

// TestProjectServeFlags: the defaults listen on loopback without a token;
// any other address needs DATA/http.token; bad addresses, a missing
// --data and a non-positive --stuck-after are usage errors.
func TestProjectServeFlags(t *testing.T) {
	ok := projectServeFlags{data: "lhc", http: defaultProjectHTTP, stuckAfter: project.StuckAfter}
	for _, c := range []struct {
		http, token string
	}{
		{defaultProjectHTTP, ""}, {"localhost:80", ""}, {"[::1]:8060", ""}, {"127.0.0.2:0", ""},
		{"0.0.0.0:8060", filepath.Join("lhc", web.TokenFile)}, {":8060", filepath.Join("lhc", web.TokenFile)},
		{"192.168.1.5:8060", filepath.Join("lhc", web.TokenFile)},
	} {
		f := ok
		f.http = c.http
		s, err := f.parse()
		if err != nil || s.addr != c.http || s.tokenFile != c.token || s.ledger != filepath.Join("lhc", "ledger.db") || s.stuckAfter != project.StuckAfter {
			t.Errorf("--http %s: %+v, %v; want token file %q", c.http, s, err, c.token)
		}
	}
	for name, f := range map[string]projectServeFlags{
		"no data":         {http: defaultProjectHTTP, stuckAfter: time.Minute},
		"no port":         {data: "d", http: "127.0.0.1", stuckAfter: time.Minute},
		"port too big":    {data: "d", http: "127.0.0.1:99999", stuckAfter: time.Minute},
		"port not number": {data: "d", http: "127.0.0.1:http", stuckAfter: time.Minute},
		"host name":       {data: "d", http: "example.org:8060", stuckAfter: time.Minute},
		"stuck after 0":   {data: "d", http: defaultProjectHTTP},
	} {
		if _, err := f.parse(); err == nil {
			t.Errorf("%s: %+v accepted", name, f)
		} else if _, usage := err.(usageError); !usage {
			t.Errorf("%s: %v is not a usage error", name, err)
		}
	}
}

// servedLedger is a project directory whose ledger holds three units:
// job0 harvested ("hello\n", valid), job1 harvested (failed), job2
// submitted an hour ago without a result.
func servedLedger(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	preparedLedger(t, dir, 3, now.Add(-time.Hour))
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.MarkSubmitted(map[string]int{"job0": 3, "job1": 3, "job2": 3}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	err = l.RecordResults([]project.Result{
		{CID: "job0", Client: "w1", ClientKey: []byte("w1"), Output: []byte("hello\n"), CPU: 2 * time.Second},
		{CID: "job1", Client: "w2", ClientKey: []byte("w2"), ExitCode: 2, Error: "exit status 2"},
	}, now.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	unit, _, err := l.UnitOf("job0")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetVerdict(unit, project.Verdict{Status: project.UnitValid, Canonical: "job0", Valid: map[string]bool{"job0": true}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// getJSON GETs url and decodes its JSON into v; the status code.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK {
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", url, ct)
		}
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return res.StatusCode
}

// keys are the keys of a JSON object.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestProjectServeAPI: every endpoint answers JSON of its shape from a
// ledger of a few units; a result downloads as an attachment; bad
// parameters are 400, an unknown job 404, describe 501 without the
// network (no --bootstrap); the page and its assets are served.
func TestProjectServeAPI(t *testing.T) {
	dir := servedLedger(t)
	l, err := project.OpenLedgerReader(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	api := newProjectAPI(l, projectName(dir), 10*time.Minute)
	srv := httptest.NewServer(api.handler(""))
	defer srv.Close()

	shapes := map[string][]string{
		"/api/summary":    {"project", "now", "jobs", "units", "results", "last_hour", "batches", "oldest_waiting_s"},
		"/api/series":     {"from", "to", "bucket_s", "units", "throughput"},
		"/api/latency":    {"results", "p50_s", "p90_s", "p99_s", "max_s", "mean_s"},
		"/api/validation": {"units", "results", "failed"},
		"/api/credit":     {"clients", "top"},
		"/api/stuck":      {"after_s", "total", "units"},
		"/api/results":    {"total", "offset", "results"},
	}
	got := map[string]map[string]any{}
	for path, want := range shapes {
		var m map[string]any
		if code := getJSON(t, srv.URL+path, &m); code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		for _, k := range want {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no %q in %v", path, k, keys(m))
			}
		}
		got[path] = m
	}
	if got["/api/summary"]["results"] != 2.0 || got["/api/summary"]["project"] != filepath.Base(dir) {
		t.Errorf("summary %v", got["/api/summary"])
	}
	var series project.Timeline
	if getJSON(t, srv.URL+"/api/series?buckets=10&span=2h", &series); len(series.Units) != 3 || len(series.Units[0].Points) != 10 || len(series.Throughput) != 2 {
		t.Errorf("series: %+v", series)
	}
	var credit struct {
		Clients int `json:"clients"`
		Top     []struct {
			Client string  `json:"client"`
			Valid  int     `json:"valid"`
			CPU    float64 `json:"cpu_s"`
		} `json:"top"`
	}
	if getJSON(t, srv.URL+"/api/credit?limit=1", &credit); credit.Clients != 2 || len(credit.Top) != 1 || credit.Top[0].Client != "w1" || credit.Top[0].CPU != 2 {
		t.Errorf("credit: %+v", credit)
	}
	var stuck struct {
		Total int `json:"total"`
		Units []struct {
			Job    string  `json:"job"`
			Reason string  `json:"reason"`
			Age    float64 `json:"age_s"`
		} `json:"units"`
	}
	if getJSON(t, srv.URL+"/api/stuck", &stuck); stuck.Total != 2 || len(stuck.Units) != 2 || stuck.Units[0].Age < 3600 ||
		!strings.Contains(stuck.Units[0].Reason+stuck.Units[1].Reason, "no result") {
		t.Errorf("stuck: %+v", stuck)
	}
	var page struct {
		Total   int `json:"total"`
		Results []struct {
			Job       string `json:"job"`
			Grade     string `json:"grade"`
			Canonical bool   `json:"canonical"`
			Size      int    `json:"size"`
		} `json:"results"`
	}
	if getJSON(t, srv.URL+"/api/results?limit=1&offset=1", &page); page.Total != 2 || len(page.Results) != 1 || page.Results[0].Job != "job0" ||
		page.Results[0].Grade != "valid" || !page.Results[0].Canonical || page.Results[0].Size != 6 {
		t.Errorf("results page 2: %+v", page)
	}

	res, err := http.Get(srv.URL + "/api/results/job0")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "hello\n" || res.Header.Get("Content-Disposition") != `attachment; filename=unit000000-job0.out` {
		t.Errorf("download: %d %q %q", res.StatusCode, body, res.Header.Get("Content-Disposition"))
	}
	for path, want := range map[string]int{
		"/api/results/job2":          404, // no result yet
		"/api/results/nope":          404,
		"/api/results/job0?file=x":   404, // its job names no output files
		"/api/results?limit=0":       400,
		"/api/results?offset=-1":     400,
		"/api/credit?limit=many":     400,
		"/api/series?span=yesterday": 400,
		"/api/describe":              400,
		"/api/describe?id=job0":      501,
		"/":                          200,
		"/web/up.js":                 200,
	} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %d %q, want %d", path, res.StatusCode, b, want)
		}
		if path == "/" && !strings.Contains(string(b), "Stuck units") {
			t.Errorf("page lacks its body: %s", b)
		}
	}
}

// TestProjectServeToken: `up project serve` bound beyond loopback prints
// its token and refuses a request without it (the control: the same
// request with it is answered); a rebinding host name is refused too.
func TestProjectServeToken(t *testing.T) {
	dir := servedLedger(t)
	cmd := upCommand("project", "serve", "--data", dir, "--http", "0.0.0.0:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve after an interrupt: %v", err)
		}
	}()
	sc := bufio.NewScanner(out)
	var port, token string
	for (port == "" || token == "") && sc.Scan() {
		line := sc.Text()
		if _, rest, ok := strings.Cut(line, "serving http://"); ok {
			addr, _, _ := strings.Cut(rest, "/")
			port = addr[strings.LastIndex(addr, ":")+1:]
		}
		if _, rest, ok := strings.Cut(line, "token (from "); ok {
			_, token, _ = strings.Cut(rest, "): ")
		}
	}
	if port == "" || token == "" {
		t.Fatalf("serve printed no address or token (%v)", sc.Err())
	}
	if b, err := os.ReadFile(filepath.Join(dir, web.TokenFile)); err != nil || strings.TrimSpace(string(b)) != token {
		t.Fatalf("token file %q (%v), printed %q", b, err, token)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	url := "http://127.0.0.1:" + port + "/api/summary"
	for _, c := range []struct {
		name, host, auth string
		want             int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "", "Bearer " + strings.Repeat("0", len(token)), http.StatusUnauthorized},
		{"token", "", "Bearer " + token, http.StatusOK},
		{"rebinding host", "evil.example:" + port, "Bearer " + token, http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if c.host != "" {
			req.Host = c.host
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, res.StatusCode, c.want)
		}
	}
}

// TestProjectServeNoLedger: serving a directory without a ledger fails
// at once, saying so.
func TestProjectServeNoLedger(t *testing.T) {
	code, _, errs := upRun(t, "project", "serve", "--data", t.TempDir(), "--http", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, "no ledger at") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestReportCache: an answer is kept reportFresh, or ten times what
// computing it took when longer (the control: just after that it is
// computed again); errors are not kept; the cache holds at most
// reportCacheSize answers.
func TestReportCache(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	c := newReportCache(func() time.Time { return now })
	calls := 0
	compute := func(cost time.Duration) func() ([]byte, error) {
		return func() ([]byte, error) {
			calls++
			now = now.Add(cost)
			return []byte(fmt.Sprint(calls)), nil
		}
	}
	get := func(key string, cost time.Duration) string {
		t.Helper()
		b, err := c.get(key, compute(cost))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	steps := []struct {
		advance time.Duration
		cost    time.Duration
		want    string
	}{
		{0, time.Millisecond, "1"},
		{900 * time.Millisecond, 0, "1"},               // within reportFresh
		{200 * time.Millisecond, 2 * time.Second, "2"}, // stale: computed again, in 2 s
		{19 * time.Second, 0, "2"},                     // fresh for 10 × 2 s
		{2 * time.Second, 0, "3"},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got := get("a", s.cost); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
	}
	if _, err := c.get("b", func() ([]byte, error) { return nil, fmt.Errorf("boom") }); err == nil {
		t.Fatal("error lost")
	}
	if got := get("b", 0); got != "4" {
		t.Fatalf("after an error: %s, want a fresh answer", got)
	}
	for i := range 2 * reportCacheSize {
		get(fmt.Sprint("k", i), 0)
	}
	if n := len(c.entries); n > reportCacheSize {
		t.Fatalf("%d answers kept, want at most %d", n, reportCacheSize)
	}
}
