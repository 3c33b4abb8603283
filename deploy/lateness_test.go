package deploy

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// slow is a dispatch producer that takes d per produce while d is set: a
// slow broker (or a CPU-bound fan-out), not a stuck one.
type slow struct {
	scheduler.Producer
	d atomic.Int64 // nanoseconds
}

func (s *slow) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	time.Sleep(time.Duration(s.d.Load())) // the slowness simulated, not a wait for an effect
	return s.Producer.ProduceSync(ctx, topic, msgs)
}

// lateness is what the shipped lateness trigger's query
// (max(chronos_fanout_lateness_seconds) or vector(0)) returns over the
// instances whose registries are given, as Prometheus would over their
// scrapes.
func lateness(t *testing.T, regs ...*prometheus.Registry) float64 {
	t.Helper()
	worst := 0.0
	for _, reg := range regs {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != lag.LatenessMetric {
				continue
			}
			for _, m := range mf.GetMetric() {
				worst = max(worst, m.GetGauge().GetValue())
			}
		}
	}
	return worst
}

// TestShippedScaledObjectSeesASlowFanOut (issue 19): a fan-out that is
// slow, not stuck, with no command backlog, makes the shipped ScaledObject
// ask for more replicas. The instance runs its own clock (a tick a second,
// wall time) over 40 jobs due every second on 4 partitions, and its
// dispatch producer takes 1 s per produce with one job per chunk: each
// advance returns after its budget and continues through the loopback, so
// the Kafka lags stay near their idle values (advances are consumed at
// once) while fires fall seconds behind. The lateness trigger, read from
// the instance's registry as Prometheus would scrape it, sees it and asks
// for a replica per 5 s; once the dispatch is fast again the fan-out
// catches up and the count falls back to 1.
func TestShippedScaledObjectSeesASlowFanOut(t *testing.T) {
	t.Parallel()
	const partitions, jobs = 4, 40
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
	names := topology.Names{}
	t0 := time.Now().Truncate(time.Second)
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	prod := &slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	prod.d.Store(int64(time.Second))
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false // a live clock: the instance ticks every second
	cfg.Producer = prod
	cfg.Registerer = reg
	cfg.Fanout.ChunkSize = 1
	cfg.Fanout.Budget = 50 * time.Millisecond
	env.Start(cfg)
	env.WaitApplied()
	dispatch := env.Collect(string(env.Layout.Dispatch()))

	type poll struct {
		all, kafka int64
		late       float64
		lags       map[string]int64
	}
	asks := func() poll {
		t.Helper()
		parts := measure(t, adm, so)
		late := lateness(t, reg)
		// The fire rate (a few fires per second) is far under a replica's
		// share: 0 here.
		all, _ := so.ReplicasWith(parts, lag.Observed{Lateness: late}, 0)
		kafka, verdicts := so.Replicas(parts, 0)
		return poll{all: all, kafka: kafka, late: late, lags: byTopic(env, verdicts)}
	}
	var last poll
	testenv.Eventually(t, 120*time.Second, func() error {
		last = asks()
		// The lateness trigger's own answer: on Apache Kafka the advances
		// also queue up now and then (the loopback is served first), so the
		// shard-trigger lag may ask first.
		if late, _ := so.Lateness.Replicas(last.late, 0); late < 2 || last.all < 2 {
			return fmt.Errorf("the shipped ScaledObject asks for %d replicas, its lateness trigger %d at %.1f s of lateness (lags %v, %d fires dispatched)",
				last.all, late, last.late, last.lags, dispatch.Len())
		}
		return nil
	})
	t.Logf("%.0f s after t0: replicas %d (the Kafka triggers alone: %d), lateness %.1f s, lags %v, fires dispatched %d",
		time.Since(t0).Seconds(), last.all, last.kafka, last.late, last.lags, dispatch.Len())
	require.Zero(t, last.lags[string(names.Jobs())], "no command backlog")
	due := int(time.Since(t0).Seconds()) * jobs
	require.Less(t, dispatch.Len(), due-jobs, "fires really are behind: more than a second of them waits (%d of about %d due dispatched)", dispatch.Len(), due)

	// The dispatch is fast again: the fan-out catches up, back to 1.
	prod.d.Store(0)
	testenv.Eventually(t, 120*time.Second, func() error {
		if p := asks(); p.all != 1 || p.late > 2 {
			return fmt.Errorf("still %d replicas at %.1f s of lateness", p.all, p.late)
		}
		return nil
	})
}
