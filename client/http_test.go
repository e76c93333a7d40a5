package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
)

// getBody fetches url and returns the status code and body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// snakeKey is a JSON key in snake_case.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// badKeys returns the keys of a decoded JSON document (objects nested in
// objects and arrays; not the keys of maps named in skip) that are not
// snake_case.
func badKeys(v any, skip map[string]bool) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeKey.MatchString(k) {
				bad = append(bad, k)
			}
			if !skip[k] {
				bad = append(bad, badKeys(e, skip)...)
			}
		}
	case []any:
		for _, e := range x {
			bad = append(bad, badKeys(e, skip)...)
		}
	}
	return bad
}

// TestHTTPAPI: the client's HTTP API serves /status as JSON with role
// "client" and snake_case keys, /metrics as Prometheus text with the
// client's job, claim and query counters and up_build_info, and 404 on
// any other path.
func TestHTTPAPI(t *testing.T) {
	cn := startCaseNet(t, 66)
	_, c := cn.worker(t, "metered", []string{"hashchain"})
	cn.submit(t, "hashchain", []string{"10", "x"}, time.Hour)
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("ran %v, err %v; want the job done", ran, err)
	}
	// A job whose input does not match its digest is claimed, then
	// released (a job the client may not run is not even claimed).
	srv0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("not the input")) }))
	defer srv0.Close()
	spec, err := cn.proj.NewSpec("hashchain", []string{"10", "y"}, []string{"lhc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	spec.Inputs = []job.Input{{URL: srv0.URL + "/in", SHA256: make([]byte, 32), Size: 13}}
	prep, err := cn.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r := cn.proj.Submit(context.Background(), []*project.Prepared{prep}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	cn.net.FlushAll(context.Background())
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("ran %v, err %v; want a claimed job released for its input", ran, err)
	}
	srv := httptest.NewServer(c.Handler("v9.9-test"))
	defer srv.Close()

	code, body := getBody(t, srv.URL+"/status")
	if code != http.StatusOK {
		t.Fatalf("GET /status: %d %s", code, body)
	}
	var st client.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Role != "client" || st.Done != 1 || st.Failed != 1 || st.Released != 1 || st.Claims.Won != 2 {
		t.Fatalf("status %+v; want role client, 1 done, 1 failed, 1 released, 2 claims won", st)
	}
	var doc any
	_ = json.Unmarshal([]byte(body), &doc)
	if bad := badKeys(doc, map[string]bool{"debts_s": true, "backoff_s": true}); len(bad) > 0 {
		t.Errorf("/status keys not snake_case: %v", bad)
	}

	code, body = getBody(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	for _, want := range []string{
		`up_client_jobs_total{outcome="claimed"} 2`,
		`up_client_jobs_total{outcome="done"} 1`,
		`up_client_jobs_total{outcome="failed"} 1`,
		`up_client_jobs_total{outcome="released"} 1`,
		`up_client_claims_total{outcome="won"} 2`,
		`up_client_queries_total{result="found"} 2`,
		`up_client_backoff_seconds{project="lhc"} 0`,
		`up_rpc_sent_total{`,
	} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^up_build_info\{.*version="v9.9-test".*\} 1$`).MatchString(body) {
		t.Errorf("/metrics lacks up_build_info{version=\"v9.9-test\"} 1")
	}

	if code, _ := getBody(t, srv.URL+"/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", code)
	}
}
