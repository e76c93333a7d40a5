package runner

import (
	"bytes"
	"sync"
)

// outputBuffer captures stdout up to max bytes; on the first write beyond
// it, it closes over (once) and discards the rest, so the process never
// blocks on a full pipe.
type outputBuffer struct {
	max      int64
	buf      bytes.Buffer
	exceeded bool
	over     chan struct{}
	once     sync.Once
}

func newOutputBuffer(max int64) *outputBuffer {
	return &outputBuffer{max: max, over: make(chan struct{})}
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
		o.once.Do(func() { close(o.over) })
		return len(p), nil
	}
	return o.buf.Write(p)
}

// memoryMessages are the (lower-case) messages of a failed allocation:
// the Go runtime's "fatal error: runtime: out of memory", strerror(ENOMEM),
// C++'s std::bad_alloc, and what a Go program built with -race says when
// mmap fails ("fatal error: too many address space collisions for -race
// mode").
var memoryMessages = []string{"out of memory", "cannot allocate memory", "std::bad_alloc", "address space collisions"}

// longestMessage is the length of the longest memoryMessages entry.
const longestMessage = len("address space collisions")

// stderrBuffer keeps the last max bytes of stderr and notes whether any of
// memoryMessages appeared anywhere in it (a Go runtime crash prints its
// message before kilobytes of goroutine traces).
type stderrBuffer struct {
	max    int
	tail   []byte
	carry  []byte // the last longestMessage-1 bytes seen
	memory bool
}

// Write implements io.Writer.
func (s *stderrBuffer) Write(p []byte) (int, error) {
	s.tail = append(s.tail, p...)
	if len(s.tail) > 2*s.max {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-s.max:]...)
	}
	if !s.memory {
		window := bytes.ToLower(append(s.carry, p...))
		for _, m := range memoryMessages {
			if bytes.Contains(window, []byte(m)) {
				s.memory = true
			}
		}
		s.carry = append(s.carry[:0], window[max(0, len(window)-(longestMessage-1)):]...)
	}
	return len(p), nil
}

// String returns the kept tail.
func (s *stderrBuffer) String() string {
	if len(s.tail) > s.max {
		return string(s.tail[len(s.tail)-s.max:])
	}
	return string(s.tail)
}
