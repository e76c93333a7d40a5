package node_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/web"
)

// TestHTTPPageAndGuard: a node's API on loopback serves its page (with
// the shared assets and a script-hash CSP) without a token and refuses a
// Host that is a DNS name; bound beyond loopback, it makes DATA/http.token
// and answers only requests that carry it.
func TestHTTPPageAndGuard(t *testing.T) {
	tn, err := testnet.Start(context.Background(), testnet.Options{
		Nodes: 2, Dir: t.TempDir(), Seed: 24,
		Configure: func(i int, cfg *node.Config) {
			cfg.HTTPAddr = []string{"127.0.0.1:0", "0.0.0.0:0"}[i]
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	local := "http://" + tn.Node(0).HTTPAddr()
	page := string(get(t, local+"/"))
	for _, want := range []string{"<title>U.P. node</title>", "/web/up.js", `id="n-ring"`, "up.poll(\"/api/series\""} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if js := string(get(t, local+"/web/up.js")); !strings.Contains(js, "function poll") {
		t.Error("/web/up.js is not up.js")
	}
	req, _ := http.NewRequest(http.MethodGet, local+"/status", nil)
	req.Host = "rebound.example:80"
	if code := do(t, req); code != http.StatusForbidden {
		t.Errorf("status for Host rebound.example: %d, want 403", code)
	}

	_, port, _ := net.SplitHostPort(tn.Node(1).HTTPAddr())
	wide := "http://127.0.0.1:" + port
	req, _ = http.NewRequest(http.MethodGet, wide+"/api/series", nil)
	if code := do(t, req); code != http.StatusUnauthorized {
		t.Errorf("series without the token beyond loopback: %d, want 401", code)
	}
	tok, err := os.ReadFile(filepath.Join(tn.Node(1).Identity().Paths.Dir, web.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	if code := do(t, req); code != http.StatusOK {
		t.Errorf("series with the token: %d, want 200", code)
	}
}

// do sends req and returns the answer's status code.
func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
