package project

import "encoding/json"

// MarshalJSON writes the credit with snake_case keys and its CPU time in
// seconds (cpu_s).
func (c Credit) MarshalJSON() ([]byte, error) {
	type plain Credit
	return json.Marshal(struct {
		plain
		CPU float64 `json:"cpu_s"`
	}{plain(c), c.CPU.Seconds()})
}

// MarshalJSON writes the stats with snake_case keys and durations in
// seconds (oldest_age_s, harvest_p50_s, harvest_p99_s).
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	return json.Marshal(struct {
		plain
		OldestAge  float64 `json:"oldest_age_s"`
		HarvestP50 float64 `json:"harvest_p50_s"`
		HarvestP99 float64 `json:"harvest_p99_s"`
	}{plain(s), s.OldestAge.Seconds(), s.HarvestP50.Seconds(), s.HarvestP99.Seconds()})
}

// MarshalJSON writes a stuck group with snake_case keys and durations in
// seconds (oldest_s, t_finish_s).
func (s Stuck) MarshalJSON() ([]byte, error) {
	type plain Stuck
	return json.Marshal(struct {
		plain
		Oldest  float64 `json:"oldest_s"`
		TFinish float64 `json:"t_finish_s"`
	}{plain(s), s.Oldest.Seconds(), s.TFinish.Seconds()})
}
