package web_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/up-pool/up/web"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })

// TestGuard lists what the guard refuses, each beside a control that
// passes.
func TestGuard(t *testing.T) {
	const token = "0123456789abcdef0123"
	for _, c := range []struct {
		name   string
		token  string
		method string
		target string
		host   string
		header map[string]string
		want   int
	}{
		{"loopback GET", "", "GET", "/status", "127.0.0.1:8050", nil, 200},
		{"localhost GET", "", "GET", "/status", "localhost:8050", nil, 200},
		{"IPv6 GET", "", "GET", "/status", "[::1]:8050", nil, 200},
		{"rebound DNS name", "", "GET", "/status", "evil.example:8050", nil, 403},
		{"action with header", "", "POST", "/api/pause", "127.0.0.1:8050", map[string]string{"X-UP-Action": "1"}, 200},
		{"action without header", "", "POST", "/api/pause", "127.0.0.1:8050", nil, 403},
		{"action from another origin", "", "POST", "/api/pause", "127.0.0.1:8050",
			map[string]string{"X-UP-Action": "1", "Origin": "http://evil.example"}, 403},
		{"action from its own origin", "", "POST", "/api/pause", "127.0.0.1:8050",
			map[string]string{"X-UP-Action": "1", "Origin": "http://127.0.0.1:8050"}, 200},
		{"token missing", token, "GET", "/status", "10.0.0.5:8060", nil, 401},
		{"token wrong", token, "GET", "/status", "10.0.0.5:8060", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"token bearer", token, "GET", "/status", "10.0.0.5:8060", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"token cookie", token, "GET", "/status", "10.0.0.5:8060", map[string]string{"Cookie": "up_token=" + token}, 200},
		{"token in URL sets cookie", token, "GET", "/?token=" + token, "10.0.0.5:8060", nil, 303},
		{"wrong token in URL", token, "GET", "/?token=nope", "10.0.0.5:8060", nil, 401},
		{"token but no action header", token, "POST", "/api/pause", "10.0.0.5:8060", map[string]string{"Authorization": "Bearer " + token}, 403},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		r.Host = c.host
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		web.Guard(ok, c.token).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: %d %q, want %d", c.name, w.Code, strings.TrimSpace(w.Body.String()), c.want)
		}
		if c.want == 303 && !strings.Contains(w.Header().Get("Set-Cookie"), "up_token="+c.token) {
			t.Errorf("%s: no cookie set: %q", c.name, w.Header().Get("Set-Cookie"))
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8050": true, "localhost:1": true, "[::1]:80": true,
		"0.0.0.0:8050": false, ":8050": false, "10.1.2.3:80": false, "nonsense": false} {
		if got := web.Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestLoadToken: a token is made once, kept private, and read back the
// same; a short token file is refused.
func TestLoadToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), web.TokenFile)
	a, err := web.LoadToken(path)
	if err != nil || len(a) != 64 {
		t.Fatalf("LoadToken = %q, %v", a, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v", err, st.Mode())
	}
	if b, err := web.LoadToken(path); err != nil || b != a {
		t.Fatalf("second LoadToken = %q, %v; want %q", b, err, a)
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := web.LoadToken(path); err == nil {
		t.Fatal("a 5-character token was accepted")
	}
}
