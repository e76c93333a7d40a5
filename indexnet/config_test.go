package indexnet_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/indexnet"
)

// TestServerConfig: defaults, and one-line errors naming the bad field.
func TestServerConfig(t *testing.T) {
	var c indexnet.ServerConfig
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ExpiryInterval != 30*time.Second || c.VerifiedCache != 65536 || c.QueryLimit != 20 || c.QueryBurst != 40 || c.DisableLoops {
		t.Errorf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		cfg  indexnet.ServerConfig
		want string
	}{
		{indexnet.ServerConfig{ExpiryInterval: -time.Second}, "index server config: ExpiryInterval -1s is negative"},
		{indexnet.ServerConfig{VerifiedCache: -1}, "index server config: VerifiedCache -1 is below 1"},
		{indexnet.ServerConfig{QueryLimit: -1}, "index server config: QueryLimit -1 is not a positive rate"},
		{indexnet.ServerConfig{QueryLimit: math.NaN()}, "index server config: QueryLimit NaN is not a positive rate"},
		{indexnet.ServerConfig{QueryBurst: -1}, "index server config: QueryBurst -1 is below 1"},
	} {
		_, err := indexnet.New(indexnet.Deps{}, tc.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := indexnet.New(indexnet.Deps{}, indexnet.ServerConfig{}); err == nil || !strings.Contains(err.Error(), "Deps.Endpoint") {
		t.Errorf("no endpoint: %v", err)
	}
}
