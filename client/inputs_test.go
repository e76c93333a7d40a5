package client_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
)

// TestInputs: a job's input is fetched over HTTP and its sha256 checked;
// a job whose input does not match is released, not run.
func TestInputs(t *testing.T) {
	cn := startCaseNet(t, 66)
	body := []byte(strings.Repeat("input data ", 1000))
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	submit := func(digest []byte) []byte {
		spec, err := cn.proj.NewSpec("noop", nil, []string{"lhc"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		spec.Inputs = []job.Input{{URL: srv.URL + "/in", SHA256: digest, Size: int64(len(body))}}
		prep, err := cn.proj.Sign(spec)
		if err != nil {
			t.Fatal(err)
		}
		if r := cn.proj.Submit(context.Background(), []*project.Prepared{prep}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		cn.net.FlushAll(context.Background())
		return prep.Key()
	}
	good := submit(sum[:])
	a, c := cn.worker(t, "w", []string{"noop"})
	_ = a
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("job with a good input: ran %v, %v", ran, err)
	}
	if st := cn.state(good); st.Phase != job.Finished {
		t.Fatalf("job with a good input is %s", st.Phase)
	}
	bad := sha256.Sum256([]byte("something else"))
	badKey := submit(bad[:])
	ran, err := c.RunOne(context.Background(), "lhc")
	if !ran || err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("job with a bad input: ran %v, err %v", ran, err)
	}
	cn.clock.Advance(time.Millisecond)
	if st := cn.state(badKey); st.Phase != job.Ready {
		t.Fatalf("job with a bad input left %s", st.Phase)
	}
}
