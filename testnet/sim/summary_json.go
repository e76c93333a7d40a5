package sim

import (
	"encoding/json"
	"math"
	"time"
)

// summaryDurations are a Summary's durations as JSON seconds.
type summaryDurations struct {
	CoolDown           float64 `json:"cool_down_s"`
	ChurnLife          float64 `json:"churn_life_s"`
	Simulated          float64 `json:"simulated_s"`
	Wall               float64 `json:"wall_s"`
	HotSpotHalvedAfter float64 `json:"hot_spot_halved_after_s"`
	FirstMove          float64 `json:"first_move_s"`
}

// summaryFields is Summary without its methods, so the JSON methods can
// embed it.
type summaryFields Summary

// MarshalJSON writes the summary with its durations in seconds.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		summaryFields
		summaryDurations
	}{summaryFields(s), summaryDurations{
		CoolDown: s.CoolDown.Seconds(), ChurnLife: s.ChurnLife.Seconds(), Simulated: s.Simulated.Seconds(),
		Wall: s.Wall.Seconds(), HotSpotHalvedAfter: s.HotSpotHalvedAfter.Seconds(), FirstMove: s.FirstMove.Seconds(),
	}})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var v struct {
		summaryFields
		summaryDurations
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Summary(v.summaryFields)
	d := v.summaryDurations
	s.CoolDown, s.ChurnLife, s.Simulated = seconds(d.CoolDown), seconds(d.ChurnLife), seconds(d.Simulated)
	s.Wall, s.HotSpotHalvedAfter, s.FirstMove = seconds(d.Wall), seconds(d.HotSpotHalvedAfter), seconds(d.FirstMove)
	return nil
}

// seconds converts seconds to a duration, rounded to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
