package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/client"
)

// TestStatusClaimLatency: the status reports no claim latency before any
// claim, then the quantiles of the won claims' durations, measured on
// the client's clock, and /metrics counts them in up_client_claim_seconds.
func TestStatusClaimLatency(t *testing.T) {
	cn := startCaseNet(t, 67)
	// The test's clock stands still: the client's moves on with the wall
	// clock from it, so its claims take some time.
	start := time.Now()
	_, c := cn.worker(t, "timed", nil, func(cfg *client.Config) {
		cfg.Runner = &inProcess{}
		cfg.Pace = -1
		cfg.Now = func() time.Time { return cn.clock.Now().Add(time.Since(start)) }
	})
	if st := c.Status(); st.ClaimsTimed != 0 || st.ClaimP50 != 0 || st.ClaimP99 != 0 {
		t.Fatalf("before any claim: %d timed, p50 %v s, p99 %v s; want none", st.ClaimsTimed, st.ClaimP50, st.ClaimP99)
	}
	const jobs = 3
	for i := range jobs {
		cn.submit(t, "echo-args", []string{"job", string(rune('a' + i))}, time.Hour)
		if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
			t.Fatalf("job %d: ran %v, err %v", i, ran, err)
		}
	}
	st := c.Status()
	if st.ClaimsTimed != jobs || st.Claims.Won != jobs {
		t.Fatalf("%d claims timed, %d won; want %d", st.ClaimsTimed, st.Claims.Won, jobs)
	}
	if st.ClaimP50 <= 0 || st.ClaimP99 < st.ClaimP50 || st.ClaimP99 > time.Since(start).Seconds() {
		t.Fatalf("claim p50 %v s, p99 %v s; want 0 < p50 ≤ p99 ≤ the test's time", st.ClaimP50, st.ClaimP99)
	}
	srv := httptest.NewServer(c.Handler("test"))
	defer srv.Close()
	code, body := getBody(t, srv.URL+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "\nup_client_claim_seconds_count 3\n") ||
		!strings.Contains(body, `up_client_claim_seconds_bucket{le="30"} 3`) {
		t.Fatalf("GET /metrics: %d, want up_client_claim_seconds counting 3 claims:\n%s", code, body)
	}
}
