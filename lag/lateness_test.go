package lag_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestLatenessGauge generates watermarks and announced times and checks the
// gauge against its definition: the latest announced time minus the
// watermark per owned partition, never negative, 0 for a partition without
// a completed advance and while nothing was announced yet; that it grows a
// second a second while announcements go on and a watermark stands still (a
// slow fan-out); and that it stays where it is while announcements stop (a
// stalled clock), however much wall time passes: the wall clock is no input.
func TestLatenessGauge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 3))
	base := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	for i := range 300 {
		announced := base.Add(time.Duration(rng.IntN(3600)) * time.Second)
		if rng.IntN(8) == 0 {
			announced = time.Time{} // no advance consumed yet
		}
		ws, ps := map[int32]time.Time{}, map[int32]lag.PartitionTimes{}
		var want strings.Builder
		want.WriteString("# HELP chronos_fanout_lateness_seconds " + help + "\n# TYPE chronos_fanout_lateness_seconds gauge\n")
		for p := range int32(rng.IntN(6)) {
			if rng.IntN(3) == 0 {
				continue // not owned
			}
			var w time.Time
			v := 0.0
			switch rng.IntN(4) {
			case 0: // never advanced
			case 1: // at or ahead of the announced time (caught up; or announced before this instance started)
				w = announced.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
				if announced.IsZero() {
					w = base
				}
			default:
				d := time.Duration(rng.IntN(600_000)) * time.Millisecond
				if announced.IsZero() {
					w = base.Add(-d)
				} else {
					w, v = announced.Add(-d), d.Seconds()
				}
			}
			ws[p] = w
			pt := lag.PartitionTimes{Watermark: w}
			if rng.IntN(3) == 0 {
				// Recovered within the grace (up to its restore plus
				// lag.RebalancePause excused: the wait for its new owner,
				// a backlog it had before still reads, adversaries 19f and
				// 19g) or longer ago (nothing excused, adversary 19e).
				restore := time.Duration(rng.IntN(120_000)) * time.Millisecond
				ago := time.Duration(rng.IntN(int(2*lag.DefaultRecoveryGrace/time.Millisecond))) * time.Millisecond
				pt.Restore, pt.RecoveredAt = restore, base.Add(48*time.Hour).Add(-ago)
				pt.CaughtUp = rng.IntN(3) == 0 // caught up: nothing excused
				if !w.IsZero() && ago < lag.DefaultRecoveryGrace && !pt.CaughtUp {
					v = 0
					if e := w.Add(restore + lag.RebalancePause); !announced.IsZero() && announced.After(e) {
						v = announced.Sub(e).Seconds()
					}
				}
			}
			if rng.IntN(4) == 0 {
				// A bucket fan-out under way since pending: late by
				// announced minus pending if that is more.
				pt.Pending = base.Add(time.Duration(rng.IntN(3600)) * time.Second)
				if !announced.IsZero() && announced.After(pt.Pending) {
					v = max(v, announced.Sub(pt.Pending).Seconds())
				}
			}
			ps[p] = pt
			fmt.Fprintf(&want, "chronos_fanout_lateness_seconds{partition=\"%d\"} %g\n", p, v)
		}
		now := base.Add(48 * time.Hour)
		g := &lag.Lateness{Partitions: func() map[int32]lag.PartitionTimes { return ps }, Announced: func() time.Time { return announced },
			Now: func() time.Time { return now }}
		if len(ws) == 0 {
			require.Zero(t, testutil.CollectAndCount(g), "case %d", i)
			continue
		}
		require.NoError(t, testutil.CollectAndCompare(g, strings.NewReader(want.String())), "case %d", i)
	}

	// Slow: the watermark stands still, the announcements go on.
	w := base
	announced := base
	g := &lag.Lateness{Watermarks: func() map[int32]time.Time { return map[int32]time.Time{0: w} }, Announced: func() time.Time { return announced }}
	for s := 1; s <= 30; s++ {
		announced = base.Add(time.Duration(s) * time.Second)
		require.InDelta(t, float64(s), testutil.ToFloat64(g), 1e-9)
	}
	// Stalled: nothing more is announced; the fan-out catches up to the
	// last announcement and reads 0 from then on.
	w = announced
	for range 30 {
		require.Zero(t, testutil.ToFloat64(g))
	}
}

// help is the gauge's help text.
const help = "The latest time the clock announced (the clock table, read by every instance) minus the shard watermark of each scheduler partition this instance owns (for 10 s after the partition finished recovering, less its restore plus 20 s: the longest it may have waited for its new owner), " +
	"or minus the start of the oldest bucket fan-out still under way on it if that is more: how far the time up to which " +
	"every due fire has been dispatched is behind the announced time. 0 when caught up (up to one clock resolution while an advance is under way); " +
	"grows a second a second while the fan-out is slow or behind its peers and the clock announces. 0 before the partition's first completed advance " +
	"and before the instance's first advance; a partition still restoring from the changelog is left out."

// TestOnTimeAsksForTheMinimum (issue 19, adversary rounds 19b and 19c): a
// system whose fires are on time asks for minReplicaCount whatever its
// partition count and whatever waits on the topics no trigger watches:
// advances and bucket triggers on chronos-shard-triggers (a bucket trigger
// goes to every partition; advances wait unconsumed during every rebalance
// and restore), continuations and one-shot completions on the loopback,
// backfill steps, ticks, bucket triggers for the router. Generated: lags
// up to a million records on each of those, the fan-out up to a second
// behind, half a replica's fire rate. maxReplicaCount is the partition
// count.
func TestOnTimeAsksForTheMinimum(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 3))
	for _, partitions := range []int32{1, 4, 12, 24, 48, 100, 1000} {
		l := topology.Layout{Partitions: partitions}
		so := lag.ScaledObjectFor(l)
		require.Equal(t, int64(partitions), so.MaxReplicas, "%d partitions", partitions)
		require.Equal(t, []lag.Target{{Group: string(l.SchedulerGroup()), Topic: string(l.Jobs()), Policy: lag.Earliest}}, so.Targets(),
			"the one Kafka trigger: commands")
		for range 50 {
			var parts []lag.Partition
			for _, tg := range lag.Targets(l) {
				for p := range partitions {
					var lg int64
					if tg.Topic != string(l.Jobs()) {
						lg = rng.Int64N(1 + []int64{2, 100, 1_000_000}[rng.IntN(3)])
					}
					parts = append(parts, lag.Partition{Group: tg.Group, Topic: tg.Topic, Partition: p, Lag: lg})
				}
			}
			late := rng.Float64()
			got, _ := so.ReplicasWith(parts, lag.Observed{Lateness: late, FireRate: lag.FiresPerReplica / 2}, 1)
			require.Equal(t, int64(1), got, "%d partitions, %.1f s lateness", partitions, late)
		}
	}
}

// TestLatenessAsksAReplicaPerThreshold: with the worst partition L seconds
// behind the announced time, the shipped ScaledObject asks for
// ceil(L / 5), capped at the partitions, whatever the partition count.
func TestLatenessAsksAReplicaPerThreshold(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 4))
	for range 500 {
		partitions := int32(1 + rng.IntN(64))
		behind := int64(rng.IntN(400))
		so := lag.ScaledObjectFor(topology.Layout{Partitions: partitions})
		slow, _ := so.ReplicasWith(nil, lag.Observed{Lateness: float64(behind)}, 0)
		want := so.Bound((behind + lag.FanoutSecondsPerReplica - 1) / lag.FanoutSecondsPerReplica)
		require.Equal(t, want, slow, "%d partitions %d s behind", partitions, behind)
	}
}

func TestParsePrometheusTrigger(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"serverAddress": "http://p:9090", "query": "max(x)", "threshold": "5", "activationThreshold": "0.5"}
	tr, err := lag.ParsePrometheusTrigger("AverageValue", ok)
	require.NoError(t, err)
	require.Equal(t, lag.PrometheusTrigger{Query: "max(x)", Threshold: 5, ActivationThreshold: 0.5}, tr)
	n, active := tr.Replicas(11, 0)
	require.Equal(t, int64(3), n)
	require.True(t, active)
	n, active = tr.Replicas(0.4, 0)
	require.Equal(t, int64(1), n, "ceil(0.4 / 5)")
	require.False(t, active)
	for _, c := range []struct {
		metricType string
		md         map[string]string
		want       string
	}{
		{"Value", ok, "only AverageValue"},
		{"", map[string]string{"serverAddress": "a", "query": "q"}, "threshold 0 must be positive"},
		{"", map[string]string{"query": "q", "threshold": "1"}, "serverAddress are required"},
		{"", map[string]string{"serverAddress": "a", "query": "q", "threshold": "five"}, `threshold "five" is not a number`},
	} {
		_, err := lag.ParsePrometheusTrigger(c.metricType, c.md)
		require.ErrorIs(t, err, lag.ErrPrometheusTrigger)
		require.ErrorContains(t, err, c.want)
	}
}

// TestThresholdsFollowTheResolution generates resolutions (10ms..1m) and
// partition counts and checks the fan-out thresholds against their
// definition (adversary round 19b, issue 19): the lateness threshold is at
// least FanoutSecondsPerReplica and twice the resolution (a caught-up
// partition saws from 0 to one resolution, so an idle system stays under
// one threshold). At 1 s it is the shipped one.
func TestThresholdsFollowTheResolution(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 2))
	for range 2000 {
		res := 10*time.Millisecond + time.Duration(rng.Int64N(int64(time.Minute-10*time.Millisecond)+1))
		if rng.IntN(2) == 0 {
			res = res.Truncate(time.Millisecond)
		}
		p := int64(1 + rng.IntN(256))
		l := lag.LatenessThreshold(res)
		require.GreaterOrEqual(t, l, float64(lag.FanoutSecondsPerReplica), "res %s", res)
		require.GreaterOrEqual(t, l, 2*res.Seconds()-1e-9, "res %s", res)
		require.True(t, l == float64(lag.FanoutSecondsPerReplica) || l == (2*res).Seconds(), "res %s: %g", res, l)
		so := lag.ScaledObjectAt(topology.Layout{Partitions: int32(p)}, res)
		require.Equal(t, l, so.Lateness.Threshold)
	}
	for _, p := range []int32{0, 1, 12, 48} {
		require.Equal(t, lag.ScaledObjectFor(topology.Layout{Partitions: p}), lag.ScaledObjectAt(topology.Layout{Partitions: p}, time.Second))
	}
	require.Equal(t, 40.0, lag.LatenessThreshold(20*time.Second))
}
