package web_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/up-pool/up/web"
)

// TestPageAndAssets: the page embeds its body and script, allows only
// that script by hash, and the shared assets are served from the binary.
func TestPageAndAssets(t *testing.T) {
	mux := http.NewServeMux()
	web.Mount(mux)
	script := `up.set("x", "hello");`
	mux.Handle("GET /{$}", web.Page("U.P. test", []byte(`<section id="x"></section>`), []byte(script)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(body)
	for _, want := range []string{"<title>U.P. test</title>", `<section id="x"></section>`, script, `src="/web/up.js"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	sum := sha256.Sum256([]byte("\n" + script + "\n"))
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, base64.StdEncoding.EncodeToString(sum[:])) {
		t.Errorf("CSP %q does not allow the page's script by hash", csp)
	}
	for _, a := range []string{"up.js", "up.css"} {
		res, err := http.Get(srv.URL + web.AssetPrefix + a)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("asset %s: %v %v", a, err, res.Status)
		}
		res.Body.Close()
	}
	if res, _ := http.Get(srv.URL + web.AssetPrefix + "nope.js"); res.StatusCode != 404 {
		t.Errorf("missing asset: %s", res.Status)
	}
}
