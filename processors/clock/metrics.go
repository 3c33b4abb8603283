package clock

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LagGauge returns chronos_clock_lag_seconds: now minus the last time this
// clock group announced, NaN while another instance owns the clock and on
// the owner until its first announcement (with the clock table built by
// StorageBuilder). now nil means time.Now. Safe for concurrent use.
func (c *Clock) LagGauge(now func() time.Time) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_clock_lag_seconds",
		Help: "Wall time minus the last time this instance's clock group announced (NaN on instances that do not own the clock partition)."},
		func() float64 {
			last := c.LastAnnounced()
			if last.IsZero() {
				return math.NaN()
			}
			return now().Sub(last).Seconds()
		})
}

// AheadGauge returns chronos_clock_ahead_seconds: Ahead in seconds. Safe
// for concurrent use.
func (c *Clock) AheadGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: AheadMetric,
		ConstLabels: prometheus.Labels{ClockGroupLabel: string(c.cfg.Layout.ClockGroup())},
		Help: "How far the announced time in the clock table is ahead of the latest tick the clock owner dropped since its last announcement, in seconds " +
			"(0 while it announces and on instances that do not own the clock partition). Nothing is announced until the ticks pass that time."},
		func() float64 { return c.Ahead().Seconds() })
}
