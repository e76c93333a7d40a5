package sandbox

import (
	"bytes"
	"strings"
)

// outputBuffer captures stdout up to max bytes. On the first write beyond
// it, it keeps what fits, calls over (which stops the guest) and discards
// the rest. The guest writes from the goroutine that runs it, so no lock.
type outputBuffer struct {
	max      int64
	over     func()
	buf      bytes.Buffer
	exceeded bool
}

// Write implements io.Writer.
func (o *outputBuffer) Write(p []byte) (int, error) {
	if o.exceeded {
		return len(p), nil
	}
	room := o.max - int64(o.buf.Len())
	if int64(len(p)) > room {
		o.buf.Write(p[:room])
		o.exceeded = true
		o.over()
		return len(p), nil
	}
	return o.buf.Write(p)
}

// memoryMessages are the (lower-case) messages of a guest whose
// allocation failed: Go's runtime ("fatal error: out of memory", "runtime:
// out of memory: cannot allocate ..."), Rust's "memory allocation of N
// bytes failed", and strerror(ENOMEM).
var memoryMessages = []string{"out of memory", "memory allocation of", "cannot allocate memory"}

// longestMessage is the length of the longest memoryMessages entry.
const longestMessage = len("cannot allocate memory")

// stderrBuffer keeps the last max bytes of stderr and notes whether any of
// memoryMessages appeared anywhere in it (a Go runtime crash prints its
// message before kilobytes of goroutine traces).
type stderrBuffer struct {
	max         int
	tail        []byte
	carry       []byte // the last longestMessage-1 bytes seen
	outOfMemory bool
}

// Write implements io.Writer.
func (s *stderrBuffer) Write(p []byte) (int, error) {
	s.keep(p)
	if !s.outOfMemory {
		window := bytes.ToLower(append(s.carry, p...))
		for _, m := range memoryMessages {
			if bytes.Contains(window, []byte(m)) {
				s.outOfMemory = true
			}
		}
		s.carry = append(s.carry[:0], window[max(0, len(window)-(longestMessage-1)):]...)
	}
	return len(p), nil
}

// keep appends p to the tail, trimming it to max bytes now and then.
func (s *stderrBuffer) keep(p []byte) {
	s.tail = append(s.tail, p...)
	if len(s.tail) > 2*s.max {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-s.max:]...)
	}
}

// note appends the line "sandbox: msg", on a line of its own: the
// sandbox's word on how the run ended.
func (s *stderrBuffer) note(msg string) {
	if len(s.tail) > 0 && s.tail[len(s.tail)-1] != '\n' {
		s.keep([]byte{'\n'})
	}
	s.keep([]byte("sandbox: " + msg + "\n"))
}

// String returns the kept tail.
func (s *stderrBuffer) String() string {
	if len(s.tail) > s.max {
		return string(s.tail[len(s.tail)-s.max:])
	}
	return string(s.tail)
}

// firstLine returns s up to its first newline (wazero's errors go on with
// a stack trace).
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// isMemoryRefusal reports whether a compile or instantiate error of
// wazero's says the module's memory minimum is over the limit (its words:
// "min N pages (X MiB) over limit of M pages (Y MiB)").
func isMemoryRefusal(err error) bool {
	return strings.Contains(err.Error(), "over limit of")
}
