package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/web"
)

// TestClientActionFlagsParse: the flags of 'up client pause', 'resume',
// 'attach' and 'detach' turn into the request sent, the token taken from
// --token or $UP_TOKEN; each bad value is a usage error naming its flag.
func TestClientActionFlagsParse(t *testing.T) {
	env := func(tok string) func(string) string {
		return func(k string) string {
			if k == tokenEnv {
				return tok
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name, verb string
		flags      clientActionFlags
		env        string
		want       clientAction
		mention    string // "" for valid
	}{
		{"pause", "pause", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}}, "",
			clientAction{api: clientAPI{base: "http://127.0.0.1:8050"}, path: "/api/pause"}, ""},
		{"resume by URL with the token from the environment", "resume", clientActionFlags{api: clientAPIFlags{addr: "https://10.0.0.2:8050/"}}, "t0k",
			clientAction{api: clientAPI{base: "https://10.0.0.2:8050", token: "t0k"}, path: "/api/resume"}, ""},
		{"--token over the environment", "pause", clientActionFlags{api: clientAPIFlags{addr: "10.0.0.2:8050", token: "flag"}}, "env",
			clientAction{api: clientAPI{base: "http://10.0.0.2:8050", token: "flag"}, path: "/api/pause"}, ""},
		{"attach with a share", "attach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}, project: "cms:25"}, "",
			clientAction{api: clientAPI{base: "http://127.0.0.1:8050"}, path: "/api/attach", body: map[string]any{"project": "cms", "share": 25.0}}, ""},
		{"attach, default share", "attach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}, project: "cms"}, "",
			clientAction{api: clientAPI{base: "http://127.0.0.1:8050"}, path: "/api/attach", body: map[string]any{"project": "cms", "share": 100.0}}, ""},
		{"detach", "detach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}, project: "cms"}, "",
			clientAction{api: clientAPI{base: "http://127.0.0.1:8050"}, path: "/api/detach", body: map[string]string{"project": "cms"}}, ""},
		{"no --http", "pause", clientActionFlags{}, "", clientAction{}, "--http"},
		{"bad --http", "pause", clientActionFlags{api: clientAPIFlags{addr: "ftp://x:1"}}, "", clientAction{}, "--http"},
		{"attach without a project", "attach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}}, "", clientAction{}, "--project"},
		{"attach with a bad share", "attach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}, project: "cms:0"}, "", clientAction{}, `--project "cms:0"`},
		{"detach without a project", "detach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}}, "", clientAction{}, "--project"},
		{"detach a bad name", "detach", clientActionFlags{api: clientAPIFlags{addr: "127.0.0.1:8050"}, project: "cms:25"}, "", clientAction{}, `--project "cms:25"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.flags.parse(tc.verb, env(tc.env))
			switch {
			case tc.mention == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.mention == "" && !reflect.DeepEqual(got, tc.want):
				t.Fatalf("parsed %+v, want %+v", got, tc.want)
			case tc.mention != "" && err == nil:
				t.Fatalf("accepted, want an error mentioning %q", tc.mention)
			case tc.mention != "" && (!strings.Contains(err.Error(), tc.mention) || !isUsage(err)):
				t.Fatalf("error %q: want a usage error mentioning %q", err, tc.mention)
			}
		})
	}
}

// fakeClientAPI is a client's API behind web.Guard with token: it
// records the actions it took and answers them with its controls.
type fakeClientAPI struct {
	mu      sync.Mutex
	actions []string // "POST /api/attach {...}"
	ctl     client.Controls
}

func (f *fakeClientAPI) serve(t *testing.T, token string) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/{action}", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.actions = append(f.actions, r.PathValue("action")+" "+mustMarshal(body))
		f.ctl.Paused = r.PathValue("action") == "pause"
		ctl := f.ctl
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(ctl)
	})
	mux.HandleFunc("GET /api/explain", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(client.Explanation{Projects: []client.ProjectExplanation{{Name: "lhc", Attached: true, Share: 100,
			Summary: "found 1 job in 1 query in the last 5 min: took 0, skipped 1: application not allowed (app burn) ×1",
			Jobs:    []client.JobNote{{Job: "bafyjob", App: "burn", Decision: "skipped", Reason: "application not allowed"}}}}})
	})
	mux.HandleFunc("GET /api/history", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(client.History{Jobs: []client.FinishedJob{{Job: "bafydone", Project: "lhc", App: "hashchain",
			Outcome: "done", Finished: time.Now(), Elapsed: 2, CPU: 1.5}}})
	})
	srv := httptest.NewServer(web.Guard(mux, token))
	t.Cleanup(srv.Close)
	return srv.URL
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestClientActionsThroughGuard: pause, resume, attach and detach reach a
// client's API behind web.Guard (the action header sent, the token from
// --token or $UP_TOKEN); without the token they fail saying where it is;
// explain and history print what the API answers.
func TestClientActionsThroughGuard(t *testing.T) {
	f := &fakeClientAPI{ctl: client.Controls{Projects: []client.ProjectControl{{Name: "lhc", Share: 100, Attached: true}}}}
	url := f.serve(t, "s3cret-token-0123456789")
	if code, _, errs := upRun(t, "client", "pause", "--http", url); code != 1 || !strings.Contains(errs, "token") {
		t.Fatalf("pause without the token: exit %d, %s", code, errs)
	}
	out := mustRun(t, "client", "pause", "--http", url, "--token", "s3cret-token-0123456789")
	if !strings.Contains(out, "client paused") || !strings.Contains(out, "lhc") {
		t.Fatalf("pause printed %q", out)
	}
	t.Setenv(tokenEnv, "s3cret-token-0123456789")
	mustRun(t, "client", "resume", "--http", url)
	mustRun(t, "client", "attach", "--http", url, "--project", "cms:25")
	mustRun(t, "client", "detach", "--http", url, "--project", "cms")
	want := []string{`pause null`, `resume null`, `attach {"project":"cms","share":25}`, `detach {"project":"cms"}`}
	if !reflect.DeepEqual(f.actions, want) {
		t.Fatalf("actions %q, want %q", f.actions, want)
	}
	if out := mustRun(t, "client", "explain", "--http", url); !strings.Contains(out, "application not allowed (app burn) ×1") ||
		!strings.Contains(out, "skipped") {
		t.Fatalf("explain printed %q", out)
	}
	if out := mustRun(t, "client", "history", "--http", url); !strings.Contains(out, "hashchain") || !strings.Contains(out, "done") {
		t.Fatalf("history printed %q", out)
	}
}

// TestClientAPIToken: 'up client run --http' needs no token on loopback
// and makes none; on another address it makes DATA/http.token once,
// prints where it is, and reads the same token at the next start.
func TestClientAPIToken(t *testing.T) {
	data := t.TempDir()
	var out strings.Builder
	for _, addr := range []string{"127.0.0.1:8050", "localhost:8050", "[::1]:8050"} {
		if tok, err := apiToken(&out, data, addr); tok != "" || err != nil {
			t.Fatalf("%s: token %q, %v; want none", addr, tok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(data, web.TokenFile)); !os.IsNotExist(err) || out.Len() != 0 {
		t.Fatalf("a loopback API made a token file (%v) or printed %q", err, out.String())
	}
	tok, err := apiToken(&out, data, "0.0.0.0:8050")
	if err != nil || len(tok) < 16 || !strings.Contains(out.String(), filepath.Join(data, web.TokenFile)) {
		t.Fatalf("token %q, %v, printed %q", tok, err, out.String())
	}
	if again, err := apiToken(&out, data, "192.168.1.5:8050"); again != tok || err != nil {
		t.Fatalf("second start: token %q, %v; want the same", again, err)
	}
}
