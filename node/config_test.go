package node

import (
	"testing"
	"time"

	"github.com/up-pool/up/dht"
)

// TestConfig: defaults, one-line errors naming the bad field, and the one
// clock, seed and logger every service is given.
func TestConfig(t *testing.T) {
	c := Config{DataDir: "d"}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.HelloTimeout != 10*time.Second || c.CRLReload != time.Minute || c.MaxKnownPeers != 32 || c.JoinRetries != 5 ||
		c.JoinBackoffMax != time.Minute || c.StoreSyncInterval != 100*time.Millisecond || c.StoreSyncEachWrite ||
		c.PeerSaveInterval != 30*time.Second || c.Now == nil || c.Seed != 1 || c.Logger == nil || c.DHT.Mode != dht.ModeServer {
		t.Errorf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "node config: no data directory (DataDir)"},
		{Config{DataDir: "d", HelloTimeout: -time.Second}, "node config: HelloTimeout -1s is negative"},
		{Config{DataDir: "d", CRLReload: -time.Second}, "node config: CRLReload -1s is negative"},
		{Config{DataDir: "d", JoinBackoffMax: -time.Second}, "node config: JoinBackoffMax -1s is negative"},
		{Config{DataDir: "d", PeerSaveInterval: -time.Second}, "node config: PeerSaveInterval -1s is negative"},
		{Config{DataDir: "d", StoreSyncInterval: -time.Second}, "node config: StoreSyncInterval -1s is negative"},
		{Config{DataDir: "d", MaxKnownPeers: -1}, "node config: MaxKnownPeers -1 is negative"},
	} {
		_, err := Open(tc.cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
