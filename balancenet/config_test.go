package balancenet

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/loadbalance"
)

// deps are Deps whose functions are never called by New.
func deps() Deps {
	return Deps{
		Current: func() Instance { return Instance{} },
		Restart: func(context.Context, crypto.PrivKey) (Instance, error) { return Instance{}, nil },
		Rejoin:  func(context.Context, peer.AddrInfo) error { return nil },
	}
}

// TestConfig: defaults, and one-line errors naming the bad field (a
// negative Interval is one: Off is the only spelling of off).
func TestConfig(t *testing.T) {
	s, err := New(deps(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	if c.Off || c.Interval != 40*time.Minute || c.Capacity != 1 || c.GrindTimeout != 5*time.Minute || c.MaxGrindBits != 28 ||
		c.Grinder == nil || c.Params.CoolDown != loadbalance.DefaultCoolDown {
		t.Errorf("defaults: %+v", c)
	}
	cc := c.controller(7)
	if cc.ProbeMin != 20*60*1000 || cc.ProbeMax != 60*60*1000 || cc.LastMove != 7 || cc.Off {
		t.Errorf("controller config: %+v", cc)
	}
	if s, err = New(deps(), Config{Off: true}); err != nil || !s.Config().Off || s.Config().Interval != 40*time.Minute {
		t.Errorf("off: %+v, %v", s.Config(), err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Interval: -time.Second}, "balance config: Interval -1s is negative (Off turns balancing off)"},
		{Config{Interval: -time.Second, Off: true}, "balance config: Interval -1s is negative"},
		{Config{Interval: time.Microsecond}, "balance config: Interval 1µs is below 1ms"},
		{Config{Capacity: -1}, "balance config: Capacity -1 is not a positive number"},
		{Config{Capacity: math.Inf(1)}, "balance config: Capacity +Inf"},
		{Config{GrindTimeout: -time.Second}, "balance config: GrindTimeout -1s is negative"},
		{Config{MaxGrindBits: 300}, "balance config: MaxGrindBits 300 is not in 1..256"},
		{Config{Params: loadbalance.Params{Phi: 2}}, "balance config: Params.Phi 2 is not in (0, 1]"},
		{Config{Params: loadbalance.Params{WIndex: -1}}, "balance config: Params.WIndex -1"},
		{Config{Params: loadbalance.Params{CoolDown: -1}}, "balance config: Params.CoolDown -1 ms is negative (NoCoolDown turns the check off)"},
	} {
		_, err := New(deps(), tc.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for name, edit := range map[string]func(*Deps){
		"Current": func(d *Deps) { d.Current = nil },
		"Restart": func(d *Deps) { d.Restart = nil },
		"Rejoin":  func(d *Deps) { d.Rejoin = nil },
	} {
		d := deps()
		edit(&d)
		if _, err := New(d, Config{}); err == nil || !strings.Contains(err.Error(), "Deps."+name) {
			t.Errorf("no %s: %v", name, err)
		}
	}
}
