package project

import (
	"context"

	"github.com/up-pool/up/wire"
)

// SetIndexHarvest makes Harvest walk the index with f.
func (p *Project) SetIndexHarvest(f func(ctx context.Context, keyword string, pageSize int, visit func([]wire.IndexHit) error) error) {
	p.harvestIndex = f
}

// IndexHarvest is how Harvest walks the index by default.
func (p *Project) IndexHarvest(ctx context.Context, keyword string, pageSize int, visit func([]wire.IndexHit) error) error {
	_, err := p.a.Index().Harvest(ctx, keyword, pageSize, visit)
	return err
}

// SetRevealCheck turns the harvest's commit–reveal check on or off (the
// tests' negative control) and returns a function restoring it.
func SetRevealCheck(on bool) (restore func()) {
	was := revealCheckOff.Swap(!on)
	return func() { revealCheckOff.Store(was) }
}
