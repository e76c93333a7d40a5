package testnet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
)

// TestAdversaryValidate: bad adversarial options are refused in one line.
func TestAdversaryValidate(t *testing.T) {
	for _, c := range []struct {
		a    testnet.Adversary
		want string // "" valid
	}{
		{testnet.Adversary{}, ""},
		{testnet.Adversary{Byzantine: 0.1, Behaviours: testnet.Behaviours, Skewed: 0.3, Skew: 10 * time.Minute, Jump: 0.1}, ""},
		{testnet.Adversary{Byzantine: 1.5, Behaviours: []string{"deny"}}, "out of [0, 1]"},
		{testnet.Adversary{Byzantine: 0.1}, "no behaviour"},
		{testnet.Adversary{Byzantine: 0.1, Behaviours: []string{"lie"}}, `behaviour "lie" unknown`},
		{testnet.Adversary{Skewed: 0.8, Jump: 0.5}, "more than all nodes"},
		{testnet.Adversary{Skewed: 0.1, Skew: -time.Second}, "negative"},
	} {
		err := c.a.ValidateAdversary()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.a, err, c.want)
		}
	}
}

// TestAdversarialNetworkChoosesNodes: the Byzantine nodes and skewed
// clocks are the fractions asked for, chosen by the seed.
func TestAdversarialNetworkChoosesNodes(t *testing.T) {
	o := testnet.Options{Nodes: 20, Dir: t.TempDir(), Seed: 3}
	o.Adversary = testnet.Adversary{Byzantine: 0.2, Behaviours: testnet.Behaviours, Skewed: 0.3, Skew: 4 * time.Minute, Jump: 0.1}
	net, err := testnet.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	byz := net.Byzantine()
	seen := map[string]int{}
	for _, b := range byz {
		seen[b]++
	}
	if len(byz) != 4 || len(seen) != 4 {
		t.Errorf("Byzantine nodes %v, want 4 with the 4 behaviours", byz)
	}
	skewed, jumps := 0, 0
	for i := range net.Len() {
		off, jump := net.ClockOffset(i)
		if off > 10*time.Minute || off < -10*time.Minute {
			t.Errorf("node %d skewed %v", i, off)
		}
		if off != 0 {
			skewed++
		}
		if jump {
			jumps++
		}
	}
	if skewed != 6 || jumps != 2 {
		t.Errorf("%d skewed clocks and %d jumping, want 6 and 2", skewed, jumps)
	}
}
