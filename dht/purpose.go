package dht

import "context"

// Purposes of lookups and near questions, as the simulator names them
// where it models them (testnet/sim), for Config.OnLookup.
const (
	PurposeSubmit     = "submit"      // a project places a job
	PurposeIndexWrite = "index write" // a writer finds an index region
	PurposeIndexQuery = "index query" // a client finds an index region
	PurposeResult     = "result"      // a client finds where a result goes
	PurposeHarvest    = "harvest"     // a project finds finished jobs and results
	PurposeCrawl      = "crawl"       // a project crawls the overlay
	PurposeClaim      = "claim"       // a client finds a job's nodes to claim it
	PurposeRelease    = "release"     // a client finds a job's nodes to release it
	PurposeJoin       = "join"        // a node looks itself up on joining
	PurposePlace      = "place"       // a node places a job a project gave it
	PurposeOther      = "other"       // none given
)

type purposeKey struct{}

// WithPurpose labels the lookups and near questions made under ctx with
// purpose, for Config.OnLookup.
func WithPurpose(ctx context.Context, purpose string) context.Context {
	return context.WithValue(ctx, purposeKey{}, purpose)
}

// PurposeOf returns the purpose ctx carries (PurposeOther when none).
func PurposeOf(ctx context.Context) string {
	if p, ok := ctx.Value(purposeKey{}).(string); ok {
		return p
	}
	return PurposeOther
}

// observeLookup tells Config.OnLookup of rpcs requests made under ctx.
func (d *DHT) observeLookup(ctx context.Context, rpcs int64) {
	if d.cfg.OnLookup != nil {
		d.cfg.OnLookup(PurposeOf(ctx), rpcs)
	}
}

// DefaultPurpose labels ctx with purpose unless it carries one already
// (a library call made for a caller that said why).
func DefaultPurpose(ctx context.Context, purpose string) context.Context {
	if _, ok := ctx.Value(purposeKey{}).(string); ok {
		return ctx
	}
	return WithPurpose(ctx, purpose)
}
