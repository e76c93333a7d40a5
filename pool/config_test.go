package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/claim"
)

// TestConfig: defaults, and one-line errors naming the bad field; a
// missing dependency is named too.
func TestConfig(t *testing.T) {
	var c Config
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.RepublishInterval != 25*time.Minute || c.RepublishJitter != 5*time.Minute || c.ReplicaExpiry != time.Hour || c.TCollect != 2*time.Hour ||
		c.GoneKeep != c.TCollect || c.MaxGone != 1<<20 || c.TSkew != time.Duration(claim.DefaultTSkew)*time.Millisecond ||
		c.ExpiryInterval != 10*time.Second || c.ResyncInterval != 10*time.Second || c.RPCTimeout != 30*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{RepublishInterval: -time.Second}, "pool config: RepublishInterval -1s is negative"},
		{Config{RepublishJitter: -time.Second}, "pool config: RepublishJitter -1s is negative"},
		{Config{ReplicaExpiry: -time.Second}, "pool config: ReplicaExpiry -1s is negative"},
		{Config{TCollect: -time.Second}, "pool config: TCollect -1s is negative"},
		{Config{GoneKeep: -time.Second}, "pool config: GoneKeep -1s is negative"},
		{Config{TSkew: -time.Second}, "pool config: TSkew -1s is negative"},
		{Config{ExpiryInterval: -time.Second}, "pool config: ExpiryInterval -1s is negative"},
		{Config{ResyncInterval: -time.Second}, "pool config: ResyncInterval -1s is negative"},
		{Config{RPCTimeout: -time.Second}, "pool config: RPCTimeout -1s is negative"},
		{Config{MaxGone: -1}, "pool config: MaxGone -1 is negative"},
		{Config{RepublishInterval: time.Minute}, "pool config: RepublishJitter 5m0s is not below RepublishInterval 1m0s"},
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
