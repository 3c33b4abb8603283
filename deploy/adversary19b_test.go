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
