package claimnet

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
)

// TestConfig: defaults, one-line errors naming the bad field, and the
// dependencies each constructor needs.
func TestConfig(t *testing.T) {
	var c Config
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TClaim != 15*time.Second || c.TSkew != time.Duration(claim.DefaultTSkew)*time.Millisecond || c.Limit != 20 || c.Burst != 40 ||
		c.Warmup != time.Minute || c.TCert != time.Minute {
		t.Errorf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{TClaim: -time.Second}, "claim config: TClaim -1s is below 1ms"},
		{Config{TClaim: time.Microsecond}, "claim config: TClaim 1µs is below 1ms"},
		{Config{TSkew: -time.Second}, "claim config: TSkew -1s is negative"},
		{Config{Limit: -1}, "claim config: Limit -1 is not a positive rate"},
		{Config{Limit: math.NaN()}, "claim config: Limit NaN is not a positive rate"},
		{Config{Burst: -1}, "claim config: Burst -1 is below 1"},
		{Config{Warmup: -time.Second}, "claim config: Warmup -1s is negative"},
		{Config{TCert: -time.Second}, "claim config: TCert -1s is negative"},
	} {
		_, err := New(Deps{}, tc.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New %+v: error %v, want %q", tc.cfg, err, tc.want)
		}
		if _, err := NewProofChecker(Deps{}, tc.cfg); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("NewProofChecker %+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(Deps{}, Config{}); err == nil || !strings.Contains(err.Error(), "Deps.Endpoint") {
		t.Errorf("New without an endpoint: %v", err)
	}
	if _, err := NewProofChecker(Deps{}, Config{}); err == nil || !strings.Contains(err.Error(), "Deps.Endpoint") {
		t.Errorf("NewProofChecker without an endpoint: %v", err)
	}
	// The proof checker, which the pool takes, needs no pool; the service does.
	d := Deps{Endpoint: &overlay.Endpoint{}, DHT: &dht.DHT{}}
	if _, err := New(d, Config{}); err == nil || !strings.Contains(err.Error(), "Deps.Pool") {
		t.Errorf("New without a pool: %v", err)
	}
	d.Pool = &pool.Pool{}
	if _, err := New(d, Config{}); err == nil || !strings.Contains(err.Error(), "Deps.Identity") {
		t.Errorf("New without an identity: %v", err)
	}
	if _, err := NewProofChecker(Deps{Endpoint: d.Endpoint, DHT: d.DHT}, Config{}); err != nil {
		t.Errorf("NewProofChecker without a pool: %v", err)
	}
}
