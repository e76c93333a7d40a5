package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const maxJob = 60 * time.Minute

// sim is a deterministic discrete-event run of a worker: whenever slots are
// free it asks Next, "runs" a job of 1–60 simulated minutes for the chosen
// project, and Charges the job's CPU time when it ends.
type sim struct {
	projects []Project
	slots    int
	jobs     int // completed jobs to simulate
	seed     uint64
	setup    func(s *Scheduler)
	runnable func(name string, done int) bool // nil: always
	onCharge func(s *Scheduler, name string, cpu time.Duration, done int)
}

func (c sim) run(t *testing.T) (cpu map[string]time.Duration, s *Scheduler) {
	t.Helper()
	s = mustNew(t, c.projects, c.slots)
	if c.setup != nil {
		c.setup(s)
	}
	rng := rand.New(rand.NewPCG(c.seed, 0x5ced))
	type slot struct {
		proj string
		cpu  time.Duration
		end  time.Duration
	}
	slots := make([]slot, c.slots)
	cpu = map[string]time.Duration{}
	done := 0
	fill := func(now time.Duration) {
		for i := range slots {
			if slots[i].proj != "" {
				continue
			}
			n, ok := s.Next(func(name string) bool { return c.runnable == nil || c.runnable(name, done) })
			if !ok {
				continue
			}
			l := time.Minute + time.Duration(rng.Int64N(int64(maxJob-time.Minute)+1))
			slots[i] = slot{n, l, now + l}
		}
	}
	fill(0)
	for done < c.jobs {
		next := -1
		for i, sl := range slots {
			if sl.proj != "" && (next < 0 || sl.end < slots[next].end) {
				next = i
			}
		}
		if next < 0 {
			t.Fatalf("after %d jobs every slot is idle", done)
		}
		sl := slots[next]
		slots[next].proj = ""
		if err := s.Charge(sl.proj, sl.cpu); err != nil {
			t.Fatal(err)
		}
		cpu[sl.proj] += sl.cpu
		done++
		if c.onCharge != nil {
			c.onCharge(s, sl.proj, sl.cpu, done)
		}
		fill(sl.end)
	}
	return cpu, s
}

func checkFractions(t *testing.T, ps []Project, cpu map[string]time.Duration, tol float64) {
	t.Helper()
	var total time.Duration
	var shares float64
	for _, p := range ps {
		total += cpu[p.Name]
		shares += p.Share
	}
	for _, p := range ps {
		want := p.Share / shares
		got := float64(cpu[p.Name]) / float64(total)
		rel := math.Abs(got-want) / want
		t.Logf("%s: share %.3f, cpu fraction %.4f (relative error %.2f%%)", p.Name, want, got, 100*rel)
		if rel > tol {
			t.Errorf("%s: cpu fraction %.4f, want %.3f ± %.0f%%", p.Name, got, want, 100*tol)
		}
	}
}

// TestSharesFollowed: over 2000 jobs of random length, CPU time follows the
// resource shares within 10 % (relative).
func TestSharesFollowed(t *testing.T) {
	two := []Project{{"A", 75}, {"B", 25}}
	three := []Project{{"A", 50}, {"B", 30}, {"C", 20}}
	for _, tc := range []struct {
		name  string
		ps    []Project
		slots int
	}{
		{"75/25 1 slot", two, 1}, {"75/25 4 slots", two, 4},
		{"50/30/20 1 slot", three, 1}, {"50/30/20 4 slots", three, 4},
	} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s seed %d", tc.name, seed), func(t *testing.T) {
				cpu, _ := sim{projects: tc.ps, slots: tc.slots, jobs: 2000, seed: seed}.run(t)
				checkFractions(t, tc.ps, cpu, 0.10)
			})
		}
	}
}

// TestIdleProjectReturns: B has no work for 500 jobs, then returns. While
// idle its debt stays zero; afterwards it catches up on nothing: its CPU
// never runs ahead of its share by more than the jobs in flight, far less
// than the debt clamp.
func TestIdleProjectReturns(t *testing.T) {
	const slots, idleUntil = 2, 500
	ps := []Project{{"A", 50}, {"B", 50}}
	var sinceA, sinceB, worst time.Duration
	_, s := sim{
		projects: ps, slots: slots, jobs: 2000, seed: 9,
		runnable: func(name string, done int) bool { return name == "A" || done >= idleUntil },
		onCharge: func(s *Scheduler, name string, cpu time.Duration, done int) {
			if done <= idleUntil {
				if name == "B" {
					t.Fatalf("idle B ran")
				}
				if d := s.Debts()["B"]; d != 0 {
					t.Fatalf("job %d: idle B has debt %v", done, d)
				}
				return
			}
			if name == "A" {
				sinceA += cpu
			} else {
				sinceB += cpu
			}
			worst = max(worst, sinceB-(sinceA+sinceB)/2)
		},
	}.run(t)
	t.Logf("B's largest excess over its share after returning: %v (bound %v, MaxDebt %v)", worst, slots*maxJob, DefaultMaxDebt)
	if worst > slots*maxJob {
		t.Errorf("B ran %v ahead of its share after returning; want ≤ %v", worst, slots*maxJob)
	}
	checkFractions(t, ps, map[string]time.Duration{"A": sinceA, "B": sinceB}, 0.10)
	if d := s.Debts(); absDur(d["A"]+d["B"]) > 2 {
		t.Errorf("final debts %v do not sum to zero", d)
	}
}

// TestCatchUpBounded: B was starved while it had work (A was charged 100
// hours at once). B then catches up, but only by the clamp: it runs ahead of
// its share by at most MaxDebt plus one job.
func TestCatchUpBounded(t *testing.T) {
	const clamp = 2 * time.Hour
	ps := []Project{{"A", 50}, {"B", 50}}
	var sinceA, sinceB, worst time.Duration
	sim{
		projects: ps, slots: 1, jobs: 400, seed: 4,
		setup: func(s *Scheduler) {
			if err := s.SetMaxDebt(clamp); err != nil {
				t.Fatal(err)
			}
			if err := s.Charge("A", 100*time.Hour); err != nil {
				t.Fatal(err)
			}
			if d := s.Debts(); d["A"] != -clamp || d["B"] != clamp {
				t.Fatalf("debts after 100h for A: %v, want ∓%v", d, clamp)
			}
		},
		onCharge: func(s *Scheduler, name string, cpu time.Duration, done int) {
			if name == "A" {
				sinceA += cpu
			} else {
				sinceB += cpu
			}
			worst = max(worst, sinceB-(sinceA+sinceB)/2)
		},
	}.run(t)
	t.Logf("B's largest catch-up: %v (clamp %v)", worst, clamp)
	if worst > clamp+maxJob {
		t.Errorf("B caught up %v; want ≤ clamp %v + one job", worst, clamp)
	}
	if worst < clamp-maxJob {
		t.Errorf("B caught up only %v; the clamped debt %v should be repaid", worst, clamp)
	}
}
