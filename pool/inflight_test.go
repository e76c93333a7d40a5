package pool

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestInflightStartsWhileWaiting: tasks start from zero while other
// goroutines wait (what network handlers and Quiesce do); every Wait
// returns, and the last one sees every task done. A sync.WaitGroup used
// this way panics under load and is reported by the race detector.
func TestInflightStartsWhileWaiting(t *testing.T) {
	var f inflight
	var started, finished atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 500 {
				started.Add(1)
				f.Go(func() { finished.Add(1) })
			}
		}()
		go func() {
			defer wg.Done()
			for range 500 {
				f.Wait()
			}
		}()
	}
	wg.Wait()
	f.Wait()
	if s, d := started.Load(), finished.Load(); s != 2000 || d != s {
		t.Fatalf("%d tasks started, %d finished after Wait; want 2000 and 2000", s, d)
	}
}
