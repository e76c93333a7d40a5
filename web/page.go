package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"time"
)

//go:embed assets
var assets embed.FS

// AssetPrefix is the path the shared assets are served under.
const AssetPrefix = "/web/"

// Mount registers the shared assets on mux under AssetPrefix: up.css and
// up.js. They are embedded in the binary; a page fetches nothing from
// elsewhere.
func Mount(mux *http.ServeMux) {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.StripPrefix(AssetPrefix, http.FileServer(http.FS(sub)))
	mux.Handle("GET "+AssetPrefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		files.ServeHTTP(w, r)
	}))
}

var shell = template.Must(template.New("shell").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="stylesheet" href="/web/up.css">
</head>
<body>
<header><h1>{{.Title}}</h1><span id="up-live" class="live" title="last update">connecting…</span></header>
<div id="up-error" class="error" hidden></div>
<main>
{{.Body}}
</main>
<script src="/web/up.js"></script>
{{.Script}}
</body>
</html>
`))

// Page returns a handler serving an HTML page: the shell (a header with
// the title and a live indicator, an error line, up.css and up.js) around
// body, an HTML fragment, with script run after up.js. The page is
// rendered once; body and script are the role's own embedded files,
// never data from the network (a page shows such data through up.js,
// which inserts it as text). Its Content-Security-Policy allows only
// this script (by hash) and the assets of this origin.
func Page(title string, body, script []byte) http.Handler {
	inline := append(append([]byte("\n"), script...), '\n')
	sum := sha256.Sum256(inline)
	csp := "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self' 'sha256-" +
		base64.StdEncoding.EncodeToString(sum[:]) + "'; frame-ancestors 'none'"
	var b bytes.Buffer
	err := shell.Execute(&b, struct {
		Title  string
		Body   template.HTML
		Script template.HTML
	}{title, template.HTML(body), template.HTML("<script>" + string(inline) + "</script>")})
	if err != nil {
		panic(err) // the shell is a constant template over constant input
	}
	page := b.Bytes()
	start := time.Now()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", csp)
		http.ServeContent(w, r, "index.html", start, bytes.NewReader(page))
	})
}
