package runner

import (
	"strings"
	"testing"
)

func TestStderrBuffer(t *testing.T) {
	s := &stderrBuffer{max: 8}
	for _, w := range []string{"fatal error: runtime: Out of ", "mem", "ory\n", strings.Repeat("trace ", 1000), "end"} {
		s.Write([]byte(w))
	}
	if !s.memory {
		t.Error("a message split across writes was missed")
	}
	if got := s.String(); got != "race end" {
		t.Errorf("tail = %q, want the last 8 bytes", got)
	}
	s = &stderrBuffer{max: 8}
	s.Write([]byte("memory was fine, out of time"))
	if s.memory {
		t.Error("a false memory message was matched")
	}
}

func TestOutputBuffer(t *testing.T) {
	o := newOutputBuffer(10)
	o.Write([]byte("12345"))
	o.Write([]byte("67890"))
	select {
	case <-o.over:
		t.Fatal("exactly max bytes counted as exceeded")
	default:
	}
	if n, err := o.Write([]byte("x")); n != 1 || err != nil {
		t.Fatalf("Write beyond the bound = %d, %v", n, err)
	}
	o.Write([]byte("more"))
	<-o.over
	if o.buf.String() != "1234567890" || !o.exceeded {
		t.Errorf("buffer %q, exceeded %v", o.buf.String(), o.exceeded)
	}
}
