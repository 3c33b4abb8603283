package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestCoarseResolutionIdleAsksForTheMinimum keeps "a system whose fires are
// on time asks for minReplicaCount" (TestOnTimeAsksForTheMinimum's doc)
// for a valid --resolution (10ms..1m), which adversary round 19b broke
// (issue 19): measured from the wall clock, a caught-up partition's
// lateness sawed from 0 to the resolution, while the lateness threshold was
// a fixed 5 s, so at --resolution 20s an idle system asked for 4 replicas.
// Measured from the announced time (Scheduler.Announced), a caught-up
// partition reads 0, and the resolution only while an advance is under way;
// the thresholds also follow the resolution (lag.ScaledObjectAt: the
// lateness threshold max(5 s, 2 x resolution)), as `chronos lag
// --resolution` and the chart's keda.resolutionMillis make them. Here the
// gauge is read as fast as we can over a whole step of announcements.
//
//	go test -count=1 -v -run TestCoarseResolutionIdleAsksForTheMinimum ./deploy/
func TestCoarseResolutionIdleAsksForTheMinimum(t *testing.T) {
	const partitions, res = 12, 20 * time.Second
	env := testenv.New(t, partitions)
	deploytest.ShippedFor(t, env)
	so := lag.ScaledObjectAt(env.Layout, res)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	cfg.Clock.Resolution = res
	cfg.Registerer = reg
	inst := env.Start(cfg)
	var first time.Time
	testenv.Eventually(t, 3*res, func() error {
		if first = inst.Scheduler().Announced(); first.IsZero() {
			return fmt.Errorf("no advance consumed yet")
		}
		return nil
	})
	worst := 0.0
	testenv.Eventually(t, 3*res, func() error {
		worst = max(worst, deploytest.Lateness(t, reg))
		if !inst.Scheduler().Announced().After(first) {
			return fmt.Errorf("one step not announced yet")
		}
		return nil
	})
	asks, _ := so.ReplicasWith(nil, lag.Observed{Lateness: worst}, 1)
	require.Equal(t, int64(1), asks, "an idle system at --resolution %s reads up to %.1f s of lateness: the shipped ScaledObject asks for %d replicas", res, worst, asks)
	require.LessOrEqual(t, worst, res.Seconds(), "a caught-up partition is at most one step behind the announced time")
}

// TestFineResolutionIdleAsksForTheMinimum keeps the same promise from the
// other side (adversary round 19b broke it): at --resolution 50ms every
// partition gets 20 advances a second, and the group commits once a second
// (sarama's default auto-commit interval), so an idle system's committed
// lag on chronos-shard-triggers is 0-20 per partition, and the trigger on
// that topic (then 5 x partitions) asked for up to 4 replicas of 4
// partitions with nothing to do. No trigger watches that topic now (round
// 19c: its lag is not fires being late); the shipped triggers, the
// lateness one read from the instance's registry, are sampled here.
//
//	go test -count=1 -v -run TestFineResolutionIdleAsksForTheMinimum ./deploy/
func TestFineResolutionIdleAsksForTheMinimum(t *testing.T) {
	const partitions, res = 4, 50 * time.Millisecond
	env := testenv.New(t, partitions)
	deploytest.ShippedFor(t, env)
	so := lag.ScaledObjectAt(env.Layout, res)
	adm := deploytest.Admin(t, env)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	cfg.Clock.Resolution = res
	cfg.Registerer = reg
	env.Start(cfg)
	// Sample the triggers for 30 s at random phases, as KEDA's 15 s
	// polls are; the HPA scales up to the lowest of its 60 s window (4
	// polls): with a share s of samples over 1, with probability ~s^4.
	var over, all int
	var seen int64
	var lags map[string]int64
	pace := time.NewTicker(20 * time.Millisecond) // a sampling rate, not a wait
	defer pace.Stop()
	for start := time.Now(); time.Since(start) < 30*time.Second; <-pace.C {
		parts, err := lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
		if err != nil {
			continue
		}
		n, verdicts := so.ReplicasWith(parts, lag.Observed{Lateness: deploytest.Lateness(t, reg)}, 0)
		all++
		if n > 1 {
			over++
			if n > seen {
				seen, lags = n, deploytest.ByTopic(env, verdicts)
			}
		}
	}
	share := float64(over) / float64(max(all, 1))
	p4 := share * share * share * share
	t.Logf("%d of %d samples asked for more than 1 replica (up to %d, lags %v): the HPA scales up in a 60 s window with probability %.2f", over, all, seen, lags, p4)
	require.Less(t, p4, 0.05, "an idle system at --resolution %s: %.0f%% of the samples asked for up to %d replicas (lags %v)", res, 100*share, seen, lags)
}
