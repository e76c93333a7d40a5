package indexwriter

import (
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/pool"
)

// TestConfig: defaults, one-line errors naming the bad field, and the
// dependencies New needs.
func TestConfig(t *testing.T) {
	var c Config
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.RewriteMin != 10*time.Minute || c.RewriteMax != 15*time.Minute || c.Tick != 10*time.Second || c.RPCTimeout != 10*time.Second ||
		c.BackupDelay != 10*time.Minute || c.Listers != 0 || c.DisableLoops {
		t.Errorf("defaults: %+v", c)
	}
	c = Config{RewriteMin: 20 * time.Minute}
	if c.ApplyDefaults(); c.RewriteMax != 25*time.Minute || c.BackupDelay != 20*time.Minute {
		t.Errorf("defaults after RewriteMin: %+v", c)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{RewriteMin: -time.Second}, "index writer config: RewriteMin -1s is negative"},
		{Config{RewriteMin: time.Hour, RewriteMax: time.Minute}, "index writer config: RewriteMax 1m0s is below RewriteMin 1h0m0s"},
		{Config{Tick: -time.Second}, "index writer config: Tick -1s is negative"},
		{Config{RPCTimeout: -time.Second}, "index writer config: RPCTimeout -1s is negative"},
		{Config{Listers: -1}, "index writer config: Listers -1 is negative"},
		{Config{BackupDelay: -time.Second}, "index writer config: BackupDelay -1s is negative"},
	} {
		_, err := New(Deps{}, tc.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for name, d := range map[string]Deps{
		"Pool":    {},
		"DHT":     {Pool: &pool.Pool{}},
		"Regions": {Pool: &pool.Pool{}, DHT: &dht.DHT{}},
	} {
		if _, err := New(d, Config{}); err == nil || !strings.Contains(err.Error(), "Deps."+name) {
			t.Errorf("no %s: %v", name, err)
		}
	}
}
