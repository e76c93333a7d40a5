package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/up-pool/up/web"
)

// TestNodeCommandsSendToken: up node status and evidence reach an API
// that asks for a token (one bound beyond loopback) with --token, and say
// what is missing without it.
func TestNodeCommandsSendToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"role":"node"}`)) })
	mux.HandleFunc("GET /evidence", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"role":"node"}`)) })
	srv := httptest.NewServer(web.Guard(mux, token))
	defer srv.Close()

	if _, err := waitNodeStatus(context.Background(), nodeAPI{addr: srv.URL}, 0, 0); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("status without the token: %v", err)
	}
	if _, err := waitNodeStatus(context.Background(), nodeAPI{addr: srv.URL, token: token}, 0, 0); err != nil {
		t.Fatalf("status with the token: %v", err)
	}
	if _, err := fetchEvidence(nodeAPI{addr: srv.URL}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("evidence without the token: %v", err)
	}
	if _, err := fetchEvidence(nodeAPI{addr: srv.URL, token: token}); err != nil {
		t.Fatalf("evidence with the token: %v", err)
	}
	if got := apiTokenOr("", func(string) string { return " env-token\n" }); got != "env-token" {
		t.Fatalf("token from $%s: %q", tokenEnv, got)
	}
}
