package clock

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LagGauge returns chronos_clock_lag_seconds: now minus the last time this
// clock group announced, absent (NaN) while another instance owns the
// clock. now nil means time.Now. Safe for concurrent use.
func (c *Clock) LagGauge(now func() time.Time) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_clock_lag_seconds",
		Help: "Wall time minus the last time this instance's clock group announced (absent while another instance owns the clock)."},
		func() float64 {
			last := c.LastAnnounced()
			if last.IsZero() {
				return math.NaN()
			}
			return now().Sub(last).Seconds()
		})
}
