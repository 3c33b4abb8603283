package deploy

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestClockAheadOfTicksAlerts keeps "the clock-stalled alert fires when the
// clock stalls" (docs/deploy.md Alerts) for a stall that piles nothing up
// (adversary round 19c, issue 19: TestAdv19cClockStalledAlertSilent). The
// clock table holds an announced time ahead of every tick (a replay with
// --clock-max-ahead negative, or the broker's clock stepping back), so the
// clock owner drops each tick: the chronos-clock lag stays near 0, which
// the old alert (that lag over 30) read as healthy, and the owner's
// chronos_clock_lag_seconds is NaN. Here: a replay instance announces now +
// 10 min and stops; a production instance with a live ticker takes over.
// For 30 s nothing is announced and nothing fires, and the instance's
// chronos_clock_announced_age_seconds (ChronosClockStalled's input) is a
// number from its start, rising a second a second, never reset: it passes
// the alert's threshold (clock.StalledThreshold: 60 s at 1 s) a minute
// after the start; chronos_clock_ahead_seconds on the owner says why (the
// table about 10 min ahead, ChronosClockAhead). Measured: age 32.8 s after
// 32.8 s, ahead 596 s (embedded broker); 33.0 s, 594 s (Apache Kafka, with
// CHRONOS_TEST_BROKERS).
//
//	go test -count=1 -v -run TestClockAheadOfTicksAlerts ./deploy/
func TestClockAheadOfTicksAlerts(t *testing.T) {
	t.Parallel()
	const partitions = 2
	env := testenv.New(t, partitions)
	now := time.Now().Truncate(time.Second)
	env.Put("every-second", codecs.JobDef{Every: "1s"}, now)

	replay := env.Config()
	replay.Clock.MaxAhead = -1 // unbounded: a replay or simulated clock
	a := env.Start(replay)
	env.WaitApplied()
	ahead := now.Add(10 * time.Minute)
	env.Tick(ahead)
	testenv.Eventually(t, 60*time.Second, func() error {
		if got := a.Scheduler().Announced(); !got.Equal(ahead) {
			return fmt.Errorf("announced %s, want %s", got, ahead)
		}
		return nil
	})
	a.Stop()

	triggers := env.Collect(string(env.Layout.ShardTriggers()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	reg := prometheus.NewRegistry()
	prod := env.Config()
	prod.Clock.NoTicker = false // production: a live ticker, the default --clock-max-ahead 1s
	prod.Registerer = reg
	started := time.Now()
	env.Start(prod)
	time.Sleep(2 * time.Second) // a settling time, then a fixed observation window
	advances0, fires0 := triggers.Len(), dispatch.Len()
	var ages []float64
	worstAhead := 0.0
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		time.Sleep(200 * time.Millisecond) // a sampling rate, not a wait for an effect
		ages = append(ages, gauge(t, reg, clock.AnnouncedAgeMetric))
		worstAhead = max(worstAhead, gauge(t, reg, clock.AheadMetric))
	}
	since := time.Since(started).Seconds()
	advances, fires := triggers.Len()-advances0, dispatch.Len()-fires0
	last := ages[len(ages)-1]
	t.Logf("30 s after the takeover: %d advances, %d fires of a job due every second; %s %.1f (%.1f s since the instance started), %s up to %.0f s; the alert's input passes %s %.0f s after the start",
		advances, fires, clock.AnnouncedAgeMetric, last, since, clock.AheadMetric, worstAhead, clock.StalledThreshold(time.Second), clock.StalledThreshold(time.Second).Seconds())
	require.Zero(t, advances, "setup: the clock is stalled")
	require.Zero(t, fires, "setup: nothing fires")
	first := -1 // the first sample with a number: NaN only until the instance has seen an announced time
	for i, g := range ages {
		if first < 0 {
			if !math.IsNaN(g) {
				first = i
			}
			continue
		}
		require.False(t, math.IsNaN(g), "sample %d: once the instance has seen an announced time its age is a number", i)
		require.GreaterOrEqual(t, g, ages[i-1], "sample %d: the age never falls while nothing is announced", i)
	}
	require.True(t, first >= 0 && first < 25, "the instance sees the announced time (its partitions' watermarks) once it has restored them: first number at sample %d", first)
	require.Greater(t, last, 30.0-0.2*float64(first)-1, "the age counts from when the instance first saw the (future) announced time: it rises a second a second, so it passes the threshold about a minute after")
	require.LessOrEqual(t, last, since)
	require.Greater(t, worstAhead, (9 * time.Minute).Seconds(), "the owner says the table is about 10 min ahead of the ticks")
}

// TestClockStalledQuietOnIdleFineResolution keeps the other side: the
// alert must not fire on a clock that is fine (adversary round 19c, issue
// 19: TestAdv19cClockStalledAlertOnIdleFineResolution). The old alert, the
// chronos-clock lag over a fixed 30 ticks, sat over 30 most of the time on
// an idle system of two instances at --resolution 10ms-20ms (ticks arrive
// at instances / resolution a second, the group commits once a second).
// The age the alert reads now is time, not a count: here two instances at
// 10ms, idle, both gauges sampled for 25 s, and the alert's expression
// (clock.StalledExpr, evaluated by clock.Stalled) false at every sample.
// Measured: 0 of 475 samples stalled, the worst age 0.10 s, while the old
// input reached 200 (embedded broker); 0 of 376, 0.26 s, 234 (Apache
// Kafka).
//
//	go test -count=1 -v -run TestClockStalledQuietOnIdleFineResolution ./deploy/
func TestClockStalledQuietOnIdleFineResolution(t *testing.T) {
	t.Parallel()
	const partitions, res = 2, 10 * time.Millisecond
	env := testenv.New(t, partitions)
	adm := deploytest.Admin(t, env)
	env.Put("every-second", codecs.JobDef{Every: "1s"}, time.Now())
	var regs []*prometheus.Registry
	for range 2 {
		reg := prometheus.NewRegistry()
		cfg := env.Config()
		cfg.Clock.NoTicker = false
		cfg.Clock.Resolution = res
		cfg.Registerer = reg
		env.Start(cfg)
		regs = append(regs, reg)
	}
	env.WaitApplied()
	time.Sleep(3 * time.Second) // the two instances settle (one rebalance), then the idle system is sampled
	clockTarget := lag.Target{Group: string(env.Layout.ClockGroup()), Topic: string(env.Layout.Clock())}
	var stalled, all int
	var worstLag int64
	worstAge := 0.0
	start := time.Now()
	for time.Since(start) < 25*time.Second {
		time.Sleep(50 * time.Millisecond) // a sampling rate, not a wait for an effect
		var ages, resolutions []time.Duration
		for _, reg := range regs {
			g := gauge(t, reg, clock.AnnouncedAgeMetric)
			require.False(t, math.IsNaN(g))
			ages = append(ages, time.Duration(g*float64(time.Second)))
			resolutions = append(resolutions, time.Duration(gauge(t, reg, clock.ResolutionMetric)*float64(time.Second)))
			worstAge = max(worstAge, g)
		}
		require.Equal(t, []time.Duration{res, res}, resolutions)
		all++
		if clock.Stalled(ages, resolutions) {
			stalled++
		}
		if parts, err := lag.Measure(context.Background(), adm, lag.Earliest, clockTarget); err == nil {
			worstLag = max(worstLag, lag.Sum(parts))
		}
	}
	t.Logf("2 instances at --resolution %s, idle: %d of %d samples stalled by the alert's expression; the worst age %.2f s; the chronos-clock lag up to %d (the old alert's input, over 30 = firing)",
		res, stalled, all, worstAge, worstLag)
	require.Positive(t, all)
	require.Zero(t, stalled, "a clock that announces every step: the alert's expression false at every sample")
}

// TestClockStalledAlertIsStalledExpr: the shipped alert is the expression
// clock.Stalled evaluates, and its threshold scales with the resolution.
func TestClockStalledAlertIsStalledExpr(t *testing.T) {
	t.Parallel()
	for _, g := range deploytest.List(deploytest.YAMLDoc(t, "deploy/prometheus/alerts.yml")["groups"]) {
		for _, r := range deploytest.List(deploytest.Get(g, "rules")) {
			if deploytest.Str(deploytest.Get(r, "alert")) == "ChronosClockStalled" {
				require.Equal(t, clock.StalledExpr, strings.TrimSpace(deploytest.Str(deploytest.Get(r, "expr"))))
				return
			}
		}
	}
	t.Fatal("alerts.yml: no ChronosClockStalled")
}
