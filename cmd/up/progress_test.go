package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressNotTerminal: progress written to a file or pipe is plain
// lines, no carriage return: the first, one per interval, and the last.
func TestProgressNotTerminal(t *testing.T) {
	var out bytes.Buffer
	p := bar(&out, false, "submit")
	for i := 0; i <= 100; i++ {
		p(i, 100)
	}
	if s := out.String(); strings.Contains(s, "\r") || !strings.HasSuffix(s, "submit: 100/100\n") {
		t.Fatalf("progress on a non-terminal: %q", s)
	}

	out.Reset()
	clock := time.Unix(0, 0)
	p = progressLines(&out, "harvest", func() time.Time { return clock }, 5*time.Second)
	for i := 0; i <= 30; i++ {
		p(i, 30)
		clock = clock.Add(time.Second)
	}
	want := "harvest: 0/30\nharvest: 5/30\nharvest: 10/30\nharvest: 15/30\nharvest: 20/30\nharvest: 25/30\nharvest: 30/30\n"
	if out.String() != want {
		t.Fatalf("progress lines:\n%s\nwant:\n%s", out.String(), want)
	}
	if bar(&out, true, "x") != nil {
		t.Fatal("quiet gives a progress function")
	}
}
