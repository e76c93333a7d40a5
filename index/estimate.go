package index

import "math"

// rate is an exponentially decayed event rate: events per second over a
// time constant tau (ms). Pure: time comes in.
type rate struct {
	v    float64 // decayed event count
	last int64   // ms of the last update
}

func (r *rate) decay(now int64, tau float64) {
	if r.last != 0 && now > r.last {
		r.v *= math.Exp(-float64(now-r.last) / tau)
	}
	if now > r.last {
		r.last = now
	}
}

// add records one event at now.
func (r *rate) add(now int64, tau float64) {
	r.decay(now, tau)
	r.v++
}

// perSecond is the rate at now.
func (r *rate) perSecond(now int64, tau float64) float64 {
	r.decay(now, tau)
	return r.v / (tau / 1000)
}

// mean is an exponentially weighted moving average of samples.
type mean struct {
	v  float64
	ok bool
}

func (m *mean) add(x, alpha float64) {
	if !m.ok {
		m.v, m.ok = x, true
		return
	}
	m.v += alpha * (x - m.v)
}
