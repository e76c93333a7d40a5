package job_test

import (
	"testing"

	"github.com/up-pool/up/job"
)

func TestMajorityAtLeast(t *testing.T) {
	for _, c := range []struct {
		in   []uint16
		want uint16
	}{
		{nil, 0},
		{[]uint16{20}, 20},
		{[]uint16{20, 20, 24, 24, 24}, 24}, // an extension a majority applied
		{[]uint16{20, 20, 20, 24, 24}, 20}, // one only a minority applied
		{[]uint16{6, 6, 6, 20, 20}, 6},     // an end a majority applied
		{[]uint16{6, 20, 20, 20, 20}, 20},
		{[]uint16{6, 20}, 6},
	} {
		if got := job.MajorityAtLeast(c.in); got != c.want {
			t.Errorf("MajorityAtLeast(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestOrderStatementBinds(t *testing.T) {
	a := job.OrderStatement([]byte{1, 2}, 20, 7)
	for _, b := range [][]byte{job.OrderStatement([]byte{1, 3}, 20, 7), job.OrderStatement([]byte{1, 2}, 21, 7), job.OrderStatement([]byte{1, 2}, 20, 8)} {
		if string(a) == string(b) {
			t.Fatal("order statements of different orders are equal")
		}
	}
}
