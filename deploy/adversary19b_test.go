//go:build adversary19b

package deploy

// Adversary round 19b on issue 19 (autoscaling on the fan-out): failing
// reproductions of promises the shipped ScaledObject and the
// chronos_fanout_lateness_seconds gauge break. Each test names the promise
// and its run command. All run on the embedded broker (and, with
// CHRONOS_TEST_BROKERS, on Apache Kafka):
//
//	go test -tags adversary19b -count=1 -v -run TestAdv19b ./deploy/

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv19bFastHostClockScalesAnIdleSystem breaks "an idle system asks for
// the minimum" under clock skew, which the clock is built to tolerate
// (MaxAhead: a fast host cannot move time past the broker's clock + 1 s):
// the gauge subtracts the watermark, which follows the broker-bounded
// clock, from the pod's own wall clock. A pod whose clock is 30 s fast
// reads ~29 s on every partition it owns, for ever, and the lateness
// trigger asks for 6 replicas of an idle system. (The mirror image: a pod
// 30 s slow reads 0 for a partition up to 30 s behind.)
//
//	go test -tags adversary19b -count=1 -v -run TestAdv19bFastHostClockScalesAnIdleSystem ./deploy/
func TestAdv19bFastHostClockScalesAnIdleSystem(t *testing.T) {
	const partitions, skew = 12, 30 * time.Second
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false // its own ticker, bounded by the broker's clock (MaxAhead 1 s)
	cfg.Now = func() time.Time { return time.Now().Add(skew) }
	cfg.Registerer = reg
	env.Start(cfg)
	var late float64
	testenv.Eventually(t, 60*time.Second, func() error {
		late = lateness(t, reg)
		if late == 0 {
			return fmt.Errorf("no advance completed yet")
		}
		return nil
	})
	asks, _ := so.ReplicasWith(nil, lag.Observed{Lateness: late}, 1)
	require.Equal(t, int64(1), asks, "an idle system whose one pod's clock is %s fast reads %.1f s of lateness: the shipped ScaledObject asks for %d replicas", skew, late, asks)
}

// TestAdv19bBackfillsScaleOut breaks "a system whose fires are on time asks
// for the minimum" for backfills (issue 14): each advance sends each
// backfill in progress one step through the loopback, so B backfills put
// about B records a second on chronos-scheduler-loop, and with the group's
// 1 s commit interval its committed lag sits near B. The loopback
// trigger's lagThreshold is a fixed 100 (not per partition, not per
// backfill), so 100 backfills at any rate ask for 2 replicas, 400 for 4-8,
// whatever load they make (up to 1,000 per partition are allowed). Here:
// 400 backfills at --backfill-rate 1 (400 fires a second in all, under 1%
// of a replica) on 4 partitions, the fan-out on time.
//
//	go test -tags adversary19b -count=1 -v -run TestAdv19bBackfillsScaleOut ./deploy/
func TestAdv19bBackfillsScaleOut(t *testing.T) {
	const partitions, jobs = 4, 400
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
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
	// Sample for 30 s after 10 s of warm-up (the backfills' joins are
	// consumed by then). KEDA's 15 s polls are not aligned to the clock's
	// ticks: a sample at a random time is one of them. The HPA scales up to
	// the lowest recommendation of its 60 s window (4 polls): with a share
	// s of samples asking for more than 1, it does so in a window with
	// probability about s^4.
	start := time.Now()
	var over, all int
	var seen int64
	var lags map[string]int64
	pace := time.NewTicker(20 * time.Millisecond) // a sampling rate, not a wait
	defer pace.Stop()
	for range pace.C {
		if time.Since(start) > 40*time.Second {
			break
		}
		parts, err := lag.Measure(context.Background(), adm, lag.Earliest, so.Targets()...)
		if err != nil || time.Since(start) < 10*time.Second {
			continue
		}
		n, verdicts := so.ReplicasWith(parts, lag.Observed{Lateness: lateness(t, reg), FireRate: 2 * jobs}, 1)
		all++
		if n > 1 {
			over++
			if n > seen {
				seen, lags = n, byTopic(env, verdicts)
			}
		}
	}
	share := float64(over) / float64(max(all, 1))
	t.Logf("%d of %d samples asked for more than 1 replica (up to %d, lags %v): the HPA scales up in a 60 s window with probability %.2f",
		over, all, seen, lags, share*share*share*share)
	require.Less(t, share*share*share*share, 0.05, "%d backfills at 1 fire/s, the fan-out on time: %.0f%% of the samples asked for up to %d replicas (lags %v)",
		jobs, 100*share, seen, lags)
}

// TestAdv19bStalledClockScalesOut: the lateness trigger cannot tell a
// fan-out that is behind (which more replicas fix, up to the partition
// count) from a clock that announces nothing (the chronos-clock owner
// stuck, or its group rebalancing: docs/operations.md "Clock stalled"),
// which they do not: every scaling step is one more rebalance of the clock
// group, the usual cause of the stall. With every fire due up to the last
// announced time dispatched and no announcement since, the gauge grows a
// second a second on every partition and the shipped ScaledObject asks for
// a replica per 5 s of it, maxReplicaCount after a minute. The same holds
// for one hot or stuck partition ("one hot partition is one instance's
// work, whatever the count", docs/operations.md): the worst partition
// decides the count for all.
//
//	go test -tags adversary19b -count=1 -v -run TestAdv19bStalledClockScalesOut ./deploy/
func TestAdv19bStalledClockScalesOut(t *testing.T) {
	const partitions = 4
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
	reg := prometheus.NewRegistry()
	cfg := env.Config() // no ticker: the test is the clock, and it stalls
	cfg.Registerer = reg
	env.Start(cfg)
	for i := range 40 {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, time.Now())
	}
	env.WaitApplied()
	env.Tick(time.Now())
	// The advance completed: the watermark is the announced time, every
	// fire due up to it dispatched (the gauge reads under 2 s once).
	testenv.Eventually(t, 60*time.Second, func() error {
		if l := lateness(t, reg); l == 0 || l >= 2 {
			return fmt.Errorf("lateness %.1f s: the advance has not completed", l)
		}
		return nil
	})
	var late float64
	testenv.Eventually(t, 60*time.Second, func() error {
		if late = lateness(t, reg); late <= 2*lag.FanoutSecondsPerReplica {
			return fmt.Errorf("lateness %.1f s", late)
		}
		return nil
	})
	n, verdicts := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late}, 1)
	require.Equal(t, int64(1), n, "the clock stalled %.0f s ago, every fire due up to then dispatched (lags %v): the shipped ScaledObject asks for %d replicas",
		late, byTopic(env, verdicts), n)
}
