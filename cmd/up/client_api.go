package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/web"
)

// tokenEnv names the environment variable that gives the API token when
// --token is not set.
const tokenEnv = "UP_TOKEN"

// tokenHelp is the help of every --token flag.
const tokenHelp = "the API's token (DATA/" + web.TokenFile + "), needed when the API is not on loopback; default $" + tokenEnv

// apiTokenOr is flag, or else the token in getenv(tokenEnv).
func apiTokenOr(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	return strings.TrimSpace(getenv(tokenEnv))
}

// nodeAPI is a running node's HTTP API: its address (host:port or URL)
// and token ("": none sent).
type nodeAPI struct {
	addr  string
	token string
}

// clientAPIFlags are the flags that reach a running client's HTTP API.
type clientAPIFlags struct {
	addr  string
	token string
}

// bindClientAPIFlags registers --http and --token on f.
func bindClientAPIFlags(f *pflag.FlagSet, fl *clientAPIFlags) {
	f.StringVar(&fl.addr, "http", fl.addr, "the client's HTTP API: host:port or http(s)://host:port (required)")
	f.StringVar(&fl.token, "token", fl.token, tokenHelp)
}

// clientAPI is a running client's HTTP API: its base URL and token.
type clientAPI struct {
	base  string // e.g. http://127.0.0.1:8050
	token string // "": none sent
}

// parse checks the flags, taking the token from getenv(tokenEnv) when
// --token is empty. It touches no network.
func (f clientAPIFlags) parse(getenv func(string) string) (clientAPI, error) {
	if err := required("http", f.addr); err != nil {
		return clientAPI{}, err
	}
	u, err := statusURL(f.addr)
	if err != nil {
		return clientAPI{}, err
	}
	return clientAPI{base: strings.TrimSuffix(u, "/status"), token: apiTokenOr(f.token, getenv)}, nil
}

// get reads the JSON document at path into v.
func (a clientAPI) get(path string, v any) error {
	return a.do(http.MethodGet, path, nil, v)
}

// post sends body (nil: none) as JSON to path, as an action, and reads
// the answer into v.
func (a clientAPI) post(path string, body, v any) error {
	return a.do(http.MethodPost, path, body, v)
}

func (a clientAPI) do(method, path string, body, v any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet {
		req.Header.Set(web.ActionHeader, "1")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("client API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("client API %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("client API %s %s: HTTP %s: %s", method, path, resp.Status, apiMessage(raw, resp.StatusCode))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("client API %s %s: not a U.P. client's answer: %w", method, path, err)
	}
	return nil
}

// apiMessage is the reason an API answer gives: its {"error": ...}, or
// its first line, with a hint for a missing or wrong token.
func apiMessage(raw []byte, code int) string {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	msg, _, _ = strings.Cut(msg, "\n")
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		msg += " (give the token: --token or $" + tokenEnv + ", from the client's DATA/" + web.TokenFile + ")"
	}
	return msg
}

// runClientGet reads the JSON document at path of the client's API into
// a T and prints it: as JSON, or with print.
func runClientGet[T any](w io.Writer, fl clientAPIFlags, path string, asJSON bool, print func(io.Writer, T) error) error {
	api, err := fl.parse(os.Getenv)
	if err != nil {
		return err
	}
	var v T
	if err := api.get(path, &v); err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, v)
	}
	return print(w, v)
}
