package deploytest

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
)

// Lateness is what the shipped lateness trigger's query
// (max(chronos_fanout_lateness_seconds) or vector(0)) returns over the
// instances whose registries are given, as Prometheus would over their
// scrapes.
func Lateness(t *testing.T, regs ...*prometheus.Registry) float64 {
	t.Helper()
	return GaugeMax(t, lag.LatenessMetric, regs...)
}

// GaugeMax is the largest value of the gauge name in regs (0 when absent).
func GaugeMax(t *testing.T, name string, regs ...*prometheus.Registry) float64 {
	t.Helper()
	worst := 0.0
	for _, reg := range regs {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					worst = max(worst, m.GetGauge().GetValue())
				}
			}
		}
	}
	return worst
}

// gauges is every value of the gauge name in regs, one per instance
// (NaN values left out, as PromQL's min skips them; -1 for an instance
// without the series, which Stalled skips too).
func gauges(t *testing.T, name string, regs ...*prometheus.Registry) []float64 {
	t.Helper()
	var out []float64
	for _, reg := range regs {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		v := -1.0
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					if g := m.GetGauge().GetValue(); !math.IsNaN(g) {
						v = g
					}
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// Ages is each instance's chronos_clock_announced_age_seconds as Stalled
// takes it (negative: no series or NaN).
func Ages(t *testing.T, regs []*prometheus.Registry) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, v := range gauges(t, clock.AnnouncedAgeMetric, regs...) {
		out = append(out, time.Duration(v*float64(time.Second)))
	}
	return out
}
