package client

import (
	_ "embed"
	"net/http"

	"github.com/up-pool/up/web"
)

var (
	//go:embed page/page.html
	pageBody []byte
	//go:embed page/page.js
	pageScript []byte
)

// page serves the client's web page: what it runs, its projects' share
// and debt, why it skipped jobs, its history, and the pause, resume,
// attach and detach actions (through the guarded /api/ endpoints).
func page() http.Handler { return web.Page("U.P. volunteer client", pageBody, pageScript) }
