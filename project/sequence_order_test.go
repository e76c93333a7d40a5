package project_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
)

// chainOf is the hashseq checkpoint of the first n steps of seqFile's
// sequence.
func chainOf(t *testing.T, n int) string {
	var ck []byte
	for step := int64(1); step <= int64(n); step++ {
		var err error
		if ck, err = apps.HashseqStep(ck, 1000, "climate", step); err != nil {
			t.Fatal(err)
		}
	}
	return string(ck)
}

// TestSequenceOrder: while a 20-step sequence runs, its project orders
// it to 6 steps (ended) or to 24 (extended) after step 3; the client
// learns the order with its next checkpoint's acknowledgements, runs
// exactly that many steps, and the ledger's result is the chain of that
// many steps. Control: without an order it runs the spec's 20.
func TestSequenceOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order uint16 // 0: none
		want  int
	}{{"ended", 6, 6}, {"extended", 24, 24}, {"no order", 0, seqSteps}} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFlow(t, 8, 99)
			ctx := context.Background()
			key := f.submitSequence(t)
			c, err := job.ParseKey(key)
			if err != nil {
				t.Fatal(err)
			}
			r := &stepRunner{}
			var ordered project.Ordered
			var orderErr error
			r.tick = func() {
				if len(r.ran()) == 2 && tc.order > 0 && ordered.Took == 0 { // step 3 just ran
					ordered, orderErr = f.proj.OrderSequence(ctx, f.ledger, c.String(), tc.order)
				}
			}
			w, _ := f.seqWorker(t, "volunteer", r)
			if ran, err := w.RunOne(ctx, "lhc"); !ran || err != nil {
				t.Fatalf("client: ran %v, %v", ran, err)
			}
			if orderErr != nil {
				t.Fatalf("order: %v", orderErr)
			}
			want := make([]int, tc.want)
			for i := range want {
				want[i] = i + 1
			}
			if got := fmt.Sprint(r.ran()); got != fmt.Sprint(want) {
				t.Fatalf("ran steps %s, want 1..%d (order %+v)", got, tc.want, ordered)
			}
			f.net.FlushAll(ctx)
			rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
			if err != nil || rep.Recorded != 1 {
				t.Fatalf("harvest: %+v %v", rep, err)
			}
			var out []byte
			if err := f.ledger.DB().QueryRow(`SELECT output FROM results`).Scan(&out); err != nil {
				t.Fatal(err)
			}
			if string(out) != chainOf(t, tc.want) {
				t.Fatalf("result is not the %d-step chain", tc.want)
			}
		})
	}
}
