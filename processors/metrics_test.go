package processors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestMetricsCountTheFiresTheyCaused fires 3 jobs twice each and one manual
// fire, with fired_at 300 ms after the scheduled time (an injected clock),
// and checks chronos_fires_total and chronos_fire_delay_seconds.
func TestMetricsCountTheFiresTheyCaused(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Registerer = reg
	clock := make(chan time.Time, 1)
	clock <- t0
	cfg.Now = func() time.Time { // the wall clock: 300 ms after the last tick
		at := <-clock
		clock <- at
		return at.Add(300 * time.Millisecond)
	}
	env.Start(cfg)
	env.Tick(t0)
	for _, id := range []string{"a", "b", "c"} {
		env.Put(id, codecs.JobDef{Every: "10s"}, t0)
	}
	env.WaitApplied()
	for i := 1; i <= 2; i++ {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		<-clock
		clock <- at
		env.Tick(at)
		dispatch.WaitLen(t, 3*i, 30*time.Second)
	}
	env.Produce(string(env.Layout.Jobs()), "a", []byte(`{"v":1,"op":"fire","trigger_id":"m1"}`), t0)
	dispatch.WaitLen(t, 7, 30*time.Second)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chronos_fires_total Dispatch events produced, by trigger (schedule, bucket, manual).
# TYPE chronos_fires_total counter
chronos_fires_total{trigger="bucket"} 0
chronos_fires_total{trigger="manual"} 1
chronos_fires_total{trigger="schedule"} 6
`), "chronos_fires_total"))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chronos_jobs Jobs in the partitions this instance owns, by state (counted at most every 30 s, or every 50 times a count's duration when that is longer).
# TYPE chronos_jobs gauge
chronos_jobs{state="active"} 3
chronos_jobs{state="completed"} 0
chronos_jobs{state="paused"} 0
`), "chronos_jobs"))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "chronos_fire_delay_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		require.Equal(t, uint64(6), h.GetSampleCount(), "one observation per scheduled fire")
		require.InDelta(t, 6*0.3, h.GetSampleSum(), 1e-9)
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == 0.25 {
				require.Zero(t, b.GetCumulativeCount())
			}
			if b.GetUpperBound() == 0.5 {
				require.Equal(t, uint64(6), b.GetCumulativeCount())
			}
		}
		return
	}
	t.Fatal("no chronos_fire_delay_seconds")
}
