package main

import "testing"

// TestStatusURL: --http values and the /status URL they name, or a usage
// error.
func TestStatusURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"127.0.0.1:8040", "http://127.0.0.1:8040/status"},
		{"localhost:8040", "http://localhost:8040/status"},
		{" 127.0.0.1:8040 ", "http://127.0.0.1:8040/status"},
		{"http://127.0.0.1:8040", "http://127.0.0.1:8040/status"},
		{"http://127.0.0.1:8040/", "http://127.0.0.1:8040/status"},
		{"http://127.0.0.1:8040/status", "http://127.0.0.1:8040/status"},
		{"https://up.example.org", "https://up.example.org/status"},
		{"[::1]:8040", "http://[::1]:8040/status"},
		{"127.0.0.1", ""},                     // no port
		{"ftp://127.0.0.1:8040", ""},          // scheme
		{"http://", ""},                       // no host
		{"http://127.0.0.1:8040/metrics", ""}, // another path
		{"http://127.0.0.1:8040/?x=1", ""},    // query
		{"http://user@127.0.0.1:8040", ""},    // user
	} {
		got, err := statusURL(c.in)
		if c.want == "" {
			if _, ok := err.(usageError); !ok {
				t.Errorf("statusURL(%q) = %q, %v; want a usage error", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("statusURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
