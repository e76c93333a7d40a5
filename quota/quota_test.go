package quota_test

import (
	"errors"
	"testing"

	"github.com/up-pool/up/quota"
)

// TestBrokenHost: a client that fails every job is down to the minimum
// quota after log2(Initial/Min) failures; an honest one that returns
// results keeps its quota and gets it back from credit.
func TestBrokenHost(t *testing.T) {
	b := quota.NewBook(quota.Config{})
	jobs := func(c string, n int) (got int) {
		for i := range n {
			if b.Ticket(c, c+string(rune('a'+i)), 60_000, 0) == nil {
				got++
			}
		}
		return got
	}
	if got := jobs("broken", 20); got != quota.DefaultInitial {
		t.Fatalf("a new client got %d tickets, want its initial quota %d", got, quota.DefaultInitial)
	}
	for i := range 3 {
		b.Report("broken", "broken"+string(rune('a'+i)), quota.Failed)
	}
	if q := b.Account("broken").Quota; q != quota.DefaultMin {
		t.Fatalf("after 3 failures quota %d, want %d", q, quota.DefaultMin)
	}
	// It still holds 5 tickets: none more until they end.
	if err := b.Ticket("broken", "new", 60_000, 1); !errors.Is(err, quota.ErrOverQuota) {
		t.Fatalf("over quota: %v", err)
	}
	// Holds end on the node's clock.
	if err := b.Ticket("broken", "new", 60_000, 60_000); err != nil {
		t.Fatalf("after the holds ended: %v", err)
	}
	// The honest client: done reports free its slots, credit raises it.
	for i := range 8 {
		b.Report("honest", "x"+string(rune('a'+i)), quota.Done)
	}
	if got := jobs("honest", 8); got != 8 {
		t.Fatalf("honest client got %d of 8", got)
	}
	b.Credit("honest", 2)
	if q := b.Account("honest").Quota; q != 32 {
		t.Fatalf("after 2 valid results quota %d, want 32", q)
	}
	b.Credit("honest", 100)
	if q := b.Account("honest").Quota; q != quota.DefaultMax {
		t.Fatalf("quota %d, want the max %d", q, quota.DefaultMax)
	}
}

func TestReportOnce(t *testing.T) {
	b := quota.NewBook(quota.Config{})
	if !b.Report("c", "j", quota.Failed) || b.Report("c", "j", quota.Failed) {
		t.Fatal("a job's report must count once")
	}
	if q := b.Account("c").Quota; q != quota.DefaultInitial/2 {
		t.Fatalf("quota %d after one failure reported twice, want %d", q, quota.DefaultInitial/2)
	}
}

func TestTicketAgainSameJob(t *testing.T) {
	b := quota.NewBook(quota.Config{Initial: 1, Min: 1, Max: 2})
	if b.Ticket("c", "j", 10, 0) != nil || b.Ticket("c", "j", 10, 5) != nil {
		t.Fatal("a ticket asked again for the job held must be given")
	}
	if err := b.Ticket("c", "k", 10, 5); !errors.Is(err, quota.ErrOverQuota) {
		t.Fatalf("another job: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []quota.Config{{Min: 4, Initial: 2, Max: 8}, {Initial: 100, Max: 8}} {
		c.ApplyDefaults()
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}
