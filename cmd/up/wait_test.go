package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/project"
)

// TestNodeStatusWait: --wait keeps asking until the node's routing table
// holds --peers nodes; without --wait the first answer is final; another
// role's API fails at once, waiting or not.
func TestNodeStatusWait(t *testing.T) {
	var asked atomic.Int32
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := asked.Add(1)
		fmt.Fprintf(w, `{"role":"node","peer_id":"P","routing_table":%d}`, n)
	}))
	defer node.Close()
	st, err := waitNodeStatus(context.Background(), nodeAPI{addr: node.URL}, 10*time.Second, 3)
	if err != nil || st.RoutingTable < 3 {
		t.Fatalf("wait for 3 peers = %d, %v", st.RoutingTable, err)
	}
	if _, err := waitNodeStatus(context.Background(), nodeAPI{addr: node.URL}, 300*time.Millisecond, 1000); err == nil ||
		!strings.Contains(err.Error(), "want 1000") {
		t.Fatalf("a table that never fills = %v, want an error naming the wanted size", err)
	}

	client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"role":"client"}`)
	}))
	defer client.Close()
	start := time.Now()
	if _, err := waitNodeStatus(context.Background(), nodeAPI{addr: client.URL}, time.Minute, 0); err == nil ||
		!strings.Contains(err.Error(), "a client answered") || time.Since(start) > 10*time.Second {
		t.Fatalf("a client's API = %v after %s, want the wrong-role error at once", err, time.Since(start))
	}

	// Nothing listens: ask once fails at once, --wait fails after it.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	if code, _, errs := upRun(t, "node", "status", "--http", deadURL); code != 1 {
		t.Fatalf("status of nothing: exit %d, %s", code, errs)
	}
	if code, _, errs := upRun(t, "node", "status", "--http", deadURL, "--wait", "300ms"); code != 1 || !strings.Contains(errs, "after waiting 300ms") {
		t.Fatalf("--wait on nothing: exit %d, %s", code, errs)
	}
	if code, _, errs := upRun(t, "node", "status", "--http", deadURL, "--peers", "3"); code != 2 {
		t.Fatalf("--peers without --wait: exit %d, %s", code, errs)
	}
}

func TestHarvestUntilDoneFlags(t *testing.T) {
	if code, _, errs := upRun(t, "project", "harvest", "--data", t.TempDir(), "--bootstrap-file", "x", "--timeout", "1m"); code != 2 ||
		!strings.Contains(errs, "--until-done") {
		t.Fatalf("--timeout without --until-done: exit %d, %s", code, errs)
	}
	for _, c := range []struct {
		units map[string]int
		want  int
	}{
		{map[string]int{}, 0},
		{map[string]int{project.UnitValid: 5}, 0},
		{map[string]int{project.UnitValid: 5, project.UnitOpen: 2, project.UnitInconclusive: 1}, 3},
	} {
		if got := undecidedUnits(project.Stats{Units: c.units}); got != c.want {
			t.Errorf("undecidedUnits(%v) = %d, want %d", c.units, got, c.want)
		}
	}
}
