package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/testnet/sim"
)

// faultFlags are the fault model's flags of 'up testnet sim' (issue 17).
type faultFlags struct {
	byzantine  float64
	behaviours string
	skewed     float64
	skew       time.Duration
	jump       float64
}

func (ff *faultFlags) register(f *pflag.FlagSet) {
	f.Float64Var(&ff.byzantine, "byzantine", 0, "share of nodes that are Byzantine, 0..1 (behaviours from --behaviours, round-robin)")
	f.StringVar(&ff.behaviours, "behaviours", "deny,drop,forge,silent,withhold", "the Byzantine nodes' behaviours, comma-separated: deny, drop, forge, silent, withhold")
	f.Float64Var(&ff.skewed, "skewed", 0, "share of nodes whose clock is off by an offset uniform in ±--skew, 0..1")
	f.DurationVar(&ff.skew, "skew", 10*time.Minute, "largest clock offset of a skewed node")
	f.Float64Var(&ff.jump, "jump", 0, "share of nodes whose clock jumps +1h once during the run, 0..1")
}

// apply sets the fault model in c and returns the run name's tags for it;
// bad flags are usage errors.
func (ff *faultFlags) apply(c *sim.Config) ([]string, error) {
	for _, v := range []struct {
		name string
		x    float64
	}{{"byzantine", ff.byzantine}, {"skewed", ff.skewed}, {"jump", ff.jump}} {
		if !(v.x >= 0 && v.x <= 1) {
			return nil, usageError{fmt.Errorf("--%s %v out of [0, 1]", v.name, v.x)}
		}
	}
	if ff.skew < 0 || ff.skew > 24*time.Hour {
		return nil, usageError{fmt.Errorf("--skew %v out of [0, 24h] (0: 10m)", ff.skew)}
	}
	bs, err := sim.ParseBehaviours(ff.behaviours)
	if err != nil {
		return nil, usageError{fmt.Errorf("--behaviours: %w", err)}
	}
	c.Byzantine, c.Behaviours, c.Skewed, c.Skew, c.Jump = ff.byzantine, bs, ff.skewed, ff.skew, ff.jump
	var tags []string
	if ff.byzantine > 0 {
		tags = append(tags, fmt.Sprintf("byz%g", 100*ff.byzantine))
	}
	if ff.skewed > 0 {
		tags = append(tags, fmt.Sprintf("skew%g", 100*ff.skewed))
	}
	if ff.jump > 0 {
		tags = append(tags, fmt.Sprintf("jump%g", 100*ff.jump))
	}
	return tags, nil
}

// printFaults prints a run's fault figures.
func printFaults(out interface{ Write([]byte) (int, error) }, ff *sim.FaultFigures) {
	if ff == nil {
		return
	}
	fmt.Fprintf(out, "faults: %.0f %% Byzantine (%s), %.0f %% skewed ±%gm, %.0f %% jumping; %d jobs beyond f = %d; lost %d (%d beyond f, %d swallowed); %d resubmitted, %d given up; double claims %d (%d beyond f), unclaimable %d (%d beyond f); claim p50 %.2fs p99 %.2fs; %d forged states refused\n",
		100*ff.Byzantine, ff.Behaviours, 100*ff.Skewed, ff.SkewS/60, 100*ff.Jump, ff.BeyondF, ff.F,
		ff.Lost, ff.LostBeyondF, ff.Swallowed, ff.Resubmitted, ff.GivenUp, ff.Doubles, ff.DoubleBeyondF, ff.Unclaimable, ff.UnclaimableBeyondF,
		ff.P50S, ff.P99S, ff.ForgedRefused)
}
