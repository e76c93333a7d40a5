package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/web"
)

// postJSON posts body to url and returns the status code and decoded
// answer.
func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp.StatusCode, v
}

// TestControlAPI: the HTTP API pauses and resumes the client, attaches
// and detaches projects (refusing a bad body, a bad name and an unknown
// project), and serves /api/explain and /api/history with snake_case
// keys; /status shows paused and the projects.
func TestControlAPI(t *testing.T) {
	cn := startCaseNet(t, 85)
	_, c := cn.worker(t, "remote", nil, quick(&inProcess{}, ""))
	srv := httptest.NewServer(c.Handler("test"))
	defer srv.Close()

	if code, v := postJSON(t, srv.URL+"/api/pause", ""); code != http.StatusOK || v["paused"] != true {
		t.Fatalf("pause: %d %v", code, v)
	}
	var st client.Status
	_, body := getBody(t, srv.URL+"/status")
	if err := json.Unmarshal([]byte(body), &st); err != nil || !st.Paused || len(st.Projects) != 1 || st.Projects[0].Name != "lhc" {
		t.Fatalf("status after pause: %v %s", err, body)
	}
	if code, v := postJSON(t, srv.URL+"/api/resume", ""); code != http.StatusOK || v["paused"] != false {
		t.Fatalf("resume: %d %v", code, v)
	}
	code, v := postJSON(t, srv.URL+"/api/attach", `{"project": "cms:25"}`)
	if code != http.StatusOK || len(v["projects"].([]any)) != 2 {
		t.Fatalf("attach: %d %v", code, v)
	}
	if code, v := postJSON(t, srv.URL+"/api/attach", `{"project": "atlas", "share": 100}`); code != http.StatusOK || !strings.Contains(mustJSON(v), `"name":"atlas","share":100`) {
		t.Fatalf("attach with a share apart: %d %v", code, v)
	}
	if code, v := postJSON(t, srv.URL+"/api/attach", `{"project": "alice"}`); code != http.StatusOK || !strings.Contains(mustJSON(v), `"name":"alice","share":100`) {
		t.Fatalf("attach without a share: %d %v; want share 100", code, v)
	}
	for _, bad := range []struct {
		path, body string
		code       int
	}{
		{"/api/attach", `{"project": "a b"}`, http.StatusBadRequest},
		{"/api/attach", `{"name": "cms"}`, http.StatusBadRequest},
		{"/api/attach", `{"project": "cms:0"}`, http.StatusBadRequest},
		{"/api/attach", `{"project": "cms:x"}`, http.StatusBadRequest},
		{"/api/attach", `not json`, http.StatusBadRequest},
		{"/api/detach", `{"project": "nope"}`, http.StatusNotFound},
	} {
		if code, v := postJSON(t, srv.URL+bad.path, bad.body); code != bad.code || v["error"] == "" {
			t.Errorf("POST %s %s: %d %v; want %d with an error", bad.path, bad.body, code, v, bad.code)
		}
	}
	if code, v := postJSON(t, srv.URL+"/api/detach", `{"project": "cms"}`); code != http.StatusOK || !strings.Contains(mustJSON(v), `{"attached":false,"name":"cms","share":25}`) {
		t.Fatalf("detach: %d %v", code, v)
	}
	if code, body := getBody(t, srv.URL+"/"); code != http.StatusOK || !strings.Contains(body, "/api/explain") && !strings.Contains(body, "<script") {
		t.Errorf("GET /: %d %.200s; want the client's page", code, body)
	}
	if code, _ := getBody(t, srv.URL+"/api/pause"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/pause: %d, want 405", code)
	}

	_, body = getBody(t, srv.URL+"/metrics")
	for _, want := range []string{`up_client_paused 0`, `up_client_project_attached{project="cms"} 0`,
		`up_client_project_attached{project="alice"} 1`, `up_client_debt_seconds{project="atlas"} 0`} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cn.submit(t, "echo-args", []string{"x"}, time.Hour)
	if ran, err := c.RunOne(t.Context(), "lhc"); !ran || err != nil {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	for _, path := range []string{"/api/explain", "/api/history"} {
		code, body := getBody(t, srv.URL+path)
		var doc any
		if code != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if bad := badKeys(doc, nil); len(bad) > 0 {
			t.Errorf("%s keys not snake_case: %v", path, bad)
		}
		if !strings.Contains(body, `"outcome": "done"`) && path == "/api/history" || !strings.Contains(body, `"decision": "done"`) && path == "/api/explain" {
			t.Errorf("GET %s lacks the job done:\n%s", path, body)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestControlAPIGuarded: behind web.Guard, as 'up client run' serves it,
// a POST without the action header (what a cross-site form sends) is
// refused and pauses nothing; the same POST with it pauses the client;
// with a token, a request without it is refused.
func TestControlAPIGuarded(t *testing.T) {
	cn := startCaseNet(t, 86)
	_, c := cn.worker(t, "guarded", nil, quick(&inProcess{}, ""))
	for _, tc := range []struct {
		token, send string
		action      bool
		want        int
	}{
		{"", "", false, http.StatusForbidden},
		{"t0ken-0123456789abcdef", "", true, http.StatusUnauthorized},
		{"t0ken-0123456789abcdef", "t0ken-0123456789abcdef", false, http.StatusForbidden},
		{"", "", true, http.StatusOK},
	} {
		srv := httptest.NewServer(web.Guard(c.Handler("test"), tc.token))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/pause", nil)
		if tc.action {
			req.Header.Set(web.ActionHeader, "1")
		}
		if tc.send != "" {
			req.Header.Set("Authorization", "Bearer "+tc.send)
		}
		resp, err := http.DefaultClient.Do(req)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || c.Status().Paused != (tc.want == http.StatusOK) {
			t.Fatalf("POST /api/pause (token %q, sent %q, action header %v): %d, paused %v; want %d",
				tc.token, tc.send, tc.action, resp.StatusCode, c.Status().Paused, tc.want)
		}
	}
}
