package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestBackfillsDoNotScaleOut keeps "a system whose fires are on time asks
// for the minimum" for backfills (issue 14), which adversary round 19b
// (issue 19) broke: each completed advance sends each backfill in progress
// one step, so B backfills put about B records a second on the group's
// input, and with its 1 s commit interval the committed lag there sits
// near B. On the loopback, whose trigger's lagThreshold is a fixed 100, 100
// backfills at any rate asked for 2 replicas and 400 for 4-8, whatever load
// they made (up to 1,000 per partition are allowed). Backfill steps now
// have their own topic (chronos-scheduler-backfill), which no trigger
// watches: their load is paced by --backfill-rate and shows in the fire
// rate. Here: 400 backfills at --backfill-rate 1 (400 fires a second in all,
// under 1% of a replica) on 4 partitions, the fan-out on time.
//
//	go test -count=1 -v -run TestBackfillsDoNotScaleOut ./deploy/
func TestBackfillsDoNotScaleOut(t *testing.T) {
	t.Parallel()
	const partitions, jobs = 4, 400
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	now := time.Now().Truncate(time.Second)
	keys, vals := make([]string, jobs), make([][]byte, jobs)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%03d", i)
		vals[i] = testenv.PutCommand(keys[i], codecs.JobDef{Every: "1s"})
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, vals, now)
	for i := range vals {
		b, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpBackfill, ID: keys[i],
			From: now.Add(-3 * time.Hour).Format(time.RFC3339), To: now.Add(-2 * time.Hour).Format(time.RFC3339)})
		require.NoError(t, err)
		vals[i] = b
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, vals, now)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false
	cfg.Fanout.BackfillRate = 1
	cfg.Registerer = reg
	env.Start(cfg)
	env.WaitApplied()
	// The backfills run: steps are consumed from their topic.
	backfill := string(env.Layout.SchedulerBackfill())
	testenv.Eventually(t, 60*time.Second, func() error {
		if n := testutilCounter(t, reg, "chronos_fires_total", "backfill"); n < jobs {
			return fmt.Errorf("%.0f backfill fires", n)
		}
		return nil
	})
	// Sample for 20 s (the backfills' joins are consumed by then). KEDA's
	// 15 s polls are not aligned to the clock's ticks: a sample at a random
	// time is one of them. The HPA scales up to the lowest recommendation
	// of its 60 s window (4 polls): with a share s of samples asking for
	// more than 1, it does so in a window with probability about s^4.
	start := time.Now()
	var over, all int
	var seen, steps int64
	var lags map[string]int64
	for time.Since(start) < 20*time.Second {
		parts, err := lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
		if err != nil {
			continue
		}
		n, verdicts := so.ReplicasWith(parts, lag.Observed{Lateness: deploytest.Lateness(t, reg), FireRate: jobs}, 1)
		all++
		if n > 1 {
			over++
			if n > seen {
				seen, lags = n, deploytest.ByTopic(env, verdicts)
			}
		}
		bf, err := lag.Measure(context.Background(), adm, lag.Earliest, lag.Target{Group: string(env.Layout.SchedulerGroup()), Topic: backfill})
		if err == nil {
			var sum int64
			for _, p := range bf {
				sum += p.Lag
			}
			steps = max(steps, sum)
		}
		time.Sleep(20 * time.Millisecond) // a sampling rate, not a wait for an effect
	}
	share := float64(over) / float64(max(all, 1))
	t.Logf("%d of %d samples asked for more than 1 replica (up to %d, lags %v); backfill steps in flight up to %d, on their own topic",
		over, all, seen, lags, steps)
	require.Positive(t, all)
	require.Less(t, share*share*share*share, 0.05, "%d backfills at 1 fire/s, the fan-out on time: %.0f%% of the samples asked for up to %d replicas (lags %v)",
		jobs, 100*share, seen, lags)
}

// TestFanoutInputsDoNotScaleOut: records waiting on the fan-out's inputs
// ask for no replica (adversary round 19c, issue 19): no trigger watches
// chronos-shard-triggers, the loopback or the backfill topic, since their
// lag is not fires being late (bucket triggers fan out to every partition
// of the first, one-shot completions go through the second, advances wait
// on the first during every rebalance and restore, backfill steps are
// paced). With no instance consuming, 1,000 backfill steps, 450 one-shot
// completions and 450 bucket triggers waiting ask for 1 (the lateness
// trigger, which reads the fan-out in seconds, decides: its tests are in
// lateness_test.go), and the lags are still measured and listed (chronos
// lag, chronos_consumergroup_lag).
//
//	go test -count=1 -v -run TestFanoutInputsDoNotScaleOut ./deploy/
func TestFanoutInputsDoNotScaleOut(t *testing.T) {
	t.Parallel()
	const partitions = 4
	env := testenv.New(t, partitions)
	so := deploytest.ShippedFor(t, env)
	adm := deploytest.Admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	loop, backfill, shard := string(env.Layout.SchedulerLoop()), string(env.Layout.SchedulerBackfill()), string(env.Layout.ShardTriggers())
	records := func(topic, kind string, n int) {
		keys, vals := make([]string, n), make([][]byte, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("job-%04d", i)
			vals[i] = codecs.EncodeInternal(codecs.ShardTrigger{Kind: kind, T: t0, Version: 1, TriggerID: "b-0-1"})
		}
		env.ProduceMany(topic, keys, vals, t0)
	}
	n, lags := kafkaAsks(t, env, adm, so)
	require.Equal(t, int64(1), n, "idle: the minimum (lags %v)", lags)

	records(backfill, codecs.KindBackfill, 1000)
	records(loop, codecs.KindComplete, 450)
	records(shard, codecs.KindBucket, 450)
	n, lags = kafkaAsks(t, env, adm, so)
	require.Equal(t, int64(1), n, "records waiting on the fan-out's inputs ask for nothing (lags %v)", lags)
	var measured []lag.Partition
	testenv.Eventually(t, 60*time.Second, func() (err error) {
		measured, err = lag.Measure(context.Background(), adm, lag.Earliest, lag.FanoutTargets(env.Layout)...)
		return err
	})
	waiting := map[string]int64{}
	for _, p := range measured {
		waiting[p.Topic] += p.Lag
	}
	require.Equal(t, map[string]int64{loop: 450, shard: 450}, waiting, "measured all the same")
}

// testutilCounter returns the counter name{trigger=trigger} in reg (0
// when absent).
func testutilCounter(t *testing.T, reg *prometheus.Registry, name, trigger string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "trigger" && l.GetValue() == trigger {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
