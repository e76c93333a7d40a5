package node

import (
	"net/http"
)

// page is the node's web page on GET /.
func (n *Node) page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>U.P. node</title><p>U.P. node: see <a href=\"/status\">/status</a>, <a href=\"/api/series\">/api/series</a>, <a href=\"/metrics\">/metrics</a>.\n"))
	})
}
