package dht

import (
	"strings"
	"testing"
	"time"
)

// TestConfig: defaults, and one-line errors naming the bad field.
func TestConfig(t *testing.T) {
	var c Config
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeServer || c.Replication != 5 || c.BucketSize != 20 || c.Concurrency != 10 || c.LookupCacheTTL != 90*time.Second ||
		c.LookupCacheSize != 65536 || c.LookupTimeout != 30*time.Second || c.ProbeTimeout != 3*time.Second || c.ProbeBackoff != 30*time.Second ||
		c.DisableLookupCache {
		t.Errorf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: 7}, "dht config: Mode 7 is not server, client or auto"},
		{Config{Replication: -1}, "dht config: Replication -1 is below 1"},
		{Config{Replication: 30}, "dht config: BucketSize 20 is below Replication 30"},
		{Config{Concurrency: -2}, "dht config: Concurrency -2 is below 1"},
		{Config{LookupCacheTTL: -time.Second}, "dht config: LookupCacheTTL -1s is negative"},
		{Config{LookupCacheSize: -1}, "dht config: LookupCacheSize -1 is below 1"},
		{Config{LookupTimeout: -time.Second}, "dht config: LookupTimeout -1s is negative"},
		{Config{ProbeTimeout: -time.Second}, "dht config: ProbeTimeout -1s is negative"},
		{Config{ProbeBackoff: -time.Second}, "dht config: ProbeBackoff -1s is negative"},
	} {
		_, err := New(Deps{}, tc.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(Deps{}, Config{}); err == nil || !strings.Contains(err.Error(), "Deps.Endpoint") {
		t.Errorf("no endpoint: %v", err)
	}
}
