package dht

// SweepRoutingTable runs one sweep now.
func (d *DHT) SweepRoutingTable() int { return d.sweepRoutingTable(d.ep.Admission()) }
