package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestCoarseResolutionIdleAsksForTheMinimum keeps "a system whose fires are
// on time asks for minReplicaCount" (TestIdleFanOutAsksForTheMinimum's doc)
// for a valid --resolution (10ms..1m), which adversary round 19b broke
// (issue 19): the watermark is the last announced step, so a
// caught-up partition's lateness saws from 0 to the resolution, while the
// lateness threshold is a fixed 5 s (FanoutSecondsPerReplica; Helm's
// keda.fanoutSecondsPerReplica says nothing of the resolution). At
// --resolution 20s an idle system reads up to ~20 s and asks for 4
// replicas; the scale-down window (the highest of 300 s) keeps them; at 1m,
// maxReplicaCount for ever. The thresholds now follow the resolution
// (lag.ScaledObjectAt: the lateness threshold max(5 s, 2 x resolution)), as
// `chronos lag --resolution` and the chart's keda.resolutionMillis make them.
//
//	go test -count=1 -v -run TestCoarseResolutionIdleAsksForTheMinimum ./deploy/
func TestCoarseResolutionIdleAsksForTheMinimum(t *testing.T) {
	const partitions, res = 12, 20 * time.Second
	env := testenv.New(t, partitions)
	shippedFor(t, env)
	so := lag.ScaledObjectAt(env.Layout, res)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	cfg.Clock.Resolution = res
	cfg.Registerer = reg
	env.Start(cfg)
	// Caught up: every partition's watermark is the latest announced step
	// (nothing due is undispatched; there are no jobs at all). Read the
	// gauge until it is late in a step (past 3 x the threshold) but within
	// one step of the wall clock.
	var late float64
	testenv.Eventually(t, 3*res, func() error {
		late = lateness(t, reg)
		if late <= 3*lag.FanoutSecondsPerReplica || late > res.Seconds()+1 {
			return fmt.Errorf("lateness %.1f s", late)
		}
		return nil
	})
	asks, _ := so.ReplicasWith(nil, lag.Observed{Lateness: late}, 1)
	require.Equal(t, int64(1), asks, "an idle system at --resolution %s reads %.1f s of lateness: the shipped ScaledObject asks for %d replicas", res, late, asks)
}

// TestFineResolutionIdleAsksForTheMinimum keeps the same promise from the
// other side (adversary round 19b broke it): the chronos-shard-triggers lagThreshold (5 x partitions)
// assumes one advance per partition per second, with about one (up to two)
// in flight at idle. At --resolution 50ms every partition gets 20 advances
// a second, and the group commits once a second (sarama's default
// auto-commit interval), so an idle system's committed lag on that topic
// is 0-20 per partition, and the trigger asks for up to 4 replicas of 4
// partitions with nothing to do. The lagThreshold now scales with the
// advances a second (lag.ShardTriggerLagThreshold: 100 x partitions at
// 50ms).
//
//	go test -count=1 -v -run TestFineResolutionIdleAsksForTheMinimum ./deploy/
func TestFineResolutionIdleAsksForTheMinimum(t *testing.T) {
	const partitions, res = 4, 50 * time.Millisecond
	env := testenv.New(t, partitions)
	shippedFor(t, env)
	so := lag.ScaledObjectAt(env.Layout, res)
	adm := admin(t, env)
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	cfg.Clock.Resolution = res
	env.Start(cfg)
	// Sample the Kafka triggers for 30 s at random phases, as KEDA's 15 s
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
		n, verdicts := so.Replicas(parts, 0)
		all++
		if n > 1 {
			over++
			if n > seen {
				seen, lags = n, byTopic(env, verdicts)
			}
		}
	}
	share := float64(over) / float64(max(all, 1))
	p4 := share * share * share * share
	t.Logf("%d of %d samples asked for more than 1 replica (up to %d, lags %v): the HPA scales up in a 60 s window with probability %.2f", over, all, seen, lags, p4)
	require.Less(t, p4, 0.05, "an idle system at --resolution %s: %.0f%% of the samples asked for up to %d replicas (lags %v)", res, 100*share, seen, lags)
}
