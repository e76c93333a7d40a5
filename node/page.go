package node

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

// page serves the node's web page on GET /: reachability, its position on
// the keyspace ring beside its neighbours, jobs held and index entries,
// load, moves and request rates over time, peers and revocations, from
// /status and /api/series.
func (n *Node) page() http.Handler { return web.Page("U.P. node", pageBody, pageScript) }
