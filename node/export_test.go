package node

// SeriesSampler is the node's sampler, for the tests to fill.
func (n *Node) SeriesSampler() *Sampler { return n.series }
