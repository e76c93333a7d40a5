// Package web owns what the daemons' web pages share: the guard in front
// of every local HTTP API (DNS rebinding, token, cross-site actions), the
// embedded assets (up.css, up.js: polling, SVG charts, tables, actions)
// and the HTML shell a role's page is served in. Each role (node, client,
// project) owns its page's body, script and JSON endpoints.
package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ActionHeader must be set ("1") on every request that is not GET or
// HEAD. A page on another origin cannot send it without a CORS preflight,
// which the guard never answers, so a site the volunteer visits cannot
// pause their client or detach a project.
const ActionHeader = "X-UP-Action"

// TokenCookie is the cookie the guard sets once a browser presented the
// token in the URL (?token=…), so the page's own requests carry it.
const TokenCookie = "up_token"

// Guard wraps h with the local API's protection:
//   - the Host header must name an IP address or localhost (a DNS name
//     that rebinds to 127.0.0.1 cannot reach the API from a web page);
//   - when token is not empty, every request carries it: header
//     "Authorization: Bearer TOKEN", the up_token cookie, or ?token=TOKEN
//     (which sets the cookie and redirects to the URL without it);
//   - a request other than GET or HEAD carries ActionHeader, and its
//     Origin, when sent, names the host it was sent to.
//
// A refused request gets 403 (401 for a missing token) and a one-line
// reason.
func Guard(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			http.Error(w, fmt.Sprintf("host %q refused: use the API by IP address or localhost", r.Host), http.StatusForbidden)
			return
		}
		if token != "" {
			if q := r.URL.Query().Get("token"); q != "" && equal(q, token) && r.Method == http.MethodGet {
				http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				u := *r.URL
				v := u.Query()
				v.Del("token")
				u.RawQuery = v.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			if !hasToken(r, token) {
				http.Error(w, "token required: open the page as /?token=TOKEN (the token file is printed at start) or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Header.Get(ActionHeader) != "1" {
				http.Error(w, "action refused: header "+ActionHeader+": 1 missing", http.StatusForbidden)
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !sameHost(o, r.Host) {
				http.Error(w, fmt.Sprintf("action refused: origin %q is not %q", o, r.Host), http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func hasToken(r *http.Request, token string) bool {
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(strings.TrimSpace(b), token) {
		return true
	}
	c, err := r.Cookie(TokenCookie)
	return err == nil && equal(c.Value, token)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// localHost reports whether a Host header names an IP address or
// localhost (with or without a port).
func localHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	return h != "" && (net.ParseIP(h) != nil || strings.EqualFold(h, "localhost"))
}

func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}

// Loopback reports whether a listen address (host:port) binds only this
// machine's loopback: such an API needs no token.
func Loopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// TokenFile is the name of the token file in a daemon's data directory.
const TokenFile = "http.token"

// LoadToken reads the API token at path, or creates one (32 random bytes,
// hex, file mode 0600) when the file does not exist.
func LoadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return "", fmt.Errorf("API token %s: %d characters, want at least 16", path, len(t))
		}
		return t, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("API token: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("API token: %w", err)
	}
	t := hex.EncodeToString(raw[:])
	tmp, err := os.CreateTemp(filepath.Dir(path), ".http.token-*")
	if err != nil {
		return "", fmt.Errorf("API token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(t + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("API token %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("API token %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("API token %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("API token %s: %w", path, err)
	}
	return t, nil
}
