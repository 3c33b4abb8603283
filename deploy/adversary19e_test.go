//go:build adversary19e

package deploy

// Adversary round 19e on issue 19 (autoscaling on what makes fires late).
// Each test names the promise it breaks and keeps its measurement.
//
//	go test -tags adversary19e -count=1 -v -run TestAdv19e ./deploy/
//
// (and on Apache Kafka with CHRONOS_TEST_BROKERS=host:port).

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv19eScaleStepHidesTheBacklog breaks "a fan-out that is truly
// behind asks for more replicas ... and never fewer than needed"
// (docs/operations.md "Autoscaling", lag.Lateness: "a partition behind its
// peers, or a fan-out too slow for the announcements it receives, reads
// its backlog in seconds"). The round-19d fix measures a partition from
// no earlier than the announced time when its store finished recovering
// (Scheduler.Partitions' from), so that a rebalance does not read as a
// fan-out behind. But a partition that was already behind before the
// rebalance is measured from the rebalance too: its backlog of advances
// (the fires it has not dispatched) vanishes from the gauge the moment the
// scale step the backlog asked for takes effect, and the HPA, reading 0,
// proposes the minimum again (it scales back down once the stabilization
// window passes, into the same backlog). Here: 2 partitions, 1 pod, 40
// jobs every second, a dispatch that takes 1 s per produce (each partition
// drains one advance a second); the clock announces 40 s at once (a burst
// of due advances, e.g. after the clock owner was stuck). The gauge reads
// the backlog and asks for 2+ replicas; a second pod joins (the scale step)
// with the same dispatch. Expected: the gauge still reads the partitions'
// backlog (the announced time minus their watermarks). See the
// log line (embedded broker). Measured (embedded broker): before the step the
// gauge 34.0 s, 2 replicas asked; after it the partitions 38 s behind the
// announced time (watermarks 12:00:03 and 12:00:04, announced 12:00:41),
// the gauge 0.0 s, 1 replica asked.
func TestAdv19eScaleStepHidesTheBacklog(t *testing.T) {
	const partitions, jobs, burst = 2, 40, 40
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	prodA := &slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Producer, cfgA.Registerer = prodA, regA
	a := env.Start(cfgA)
	env.WaitApplied()

	at := t0
	tick := func() { at = at.Add(time.Second); env.Tick(at) }
	tick()
	first := at
	testenv.Eventually(t, 60*time.Second, func() error {
		ws := a.Scheduler().Watermarks()
		if len(ws) != partitions {
			return fmt.Errorf("watermarks %v", ws)
		}
		for p, w := range ws {
			if !w.Equal(first) {
				return fmt.Errorf("partition %d watermark %s, want %s", p, w, first)
			}
		}
		return nil
	})

	// The dispatch slows down; the clock announces a burst of advances.
	prodA.d.Store(int64(time.Second))
	for range burst {
		tick()
	}
	var before float64
	testenv.Eventually(t, 60*time.Second, func() error {
		before = lateness(t, regA)
		if before < burst/2 {
			return fmt.Errorf("gauge %.1f s, the backlog not read yet", before)
		}
		return nil
	})
	nBefore, _ := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: before}, 1)
	require.Greater(t, nBefore, int64(1), "setup: the backlog asks for more replicas (gauge %.1f s)", before)

	// The scale step: a second pod, its dispatch as slow.
	prodB := &slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	prodB.d.Store(int64(time.Second))
	cfgB := env.Config()
	cfgB.Producer, cfgB.Registerer = prodB, regB
	b := env.Start(cfgB)
	var behind float64
	var ws map[int32]time.Time
	testenv.Eventually(t, 60*time.Second, func() error {
		wa, wb := a.Scheduler().Watermarks(), b.Scheduler().Watermarks()
		if len(wa) == 0 || len(wb) == 0 || len(wa)+len(wb) != partitions {
			return fmt.Errorf("partitions of A %v, of B %v", wa, wb)
		}
		ws = map[int32]time.Time{}
		for p, w := range wa {
			ws[p] = w
		}
		for p, w := range wb {
			ws[p] = w
		}
		return nil
	})
	for _, w := range ws {
		behind = max(behind, at.Sub(w).Seconds())
	}
	late := lateness(t, regA, regB)
	n, _ := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late}, 2)
	t.Logf("before the scale step: gauge %.1f s, %d replicas asked; after it (both pods own a partition): watermarks %v, up to %.0f s behind the announced time %s; gauge %.1f s, %d replicas asked",
		before, nBefore, ws, behind, at.Format(time.TimeOnly), late, n)
	require.Greater(t, behind, 2*lag.LatenessThreshold(time.Second), "setup: after the scale step the partitions are still behind by more than two thresholds")
	require.GreaterOrEqual(t, late, behind-lag.LatenessThreshold(time.Second),
		"the partitions are %.0f s behind the announced time after the scale step, but the gauge reads %.1f s (measured from the announced time when each finished recovering): %d replicas asked, %d before the step",
		behind, late, n, nBefore)
}

// TestAdv19eRestartHidesTheBacklog breaks the same promise through a
// restart instead of a scale step (docs/operations.md "Clock stalled"
// names "an OOM at the first burst"; lag.Lateness: "a fan-out too slow for
// the announcements it receives reads its backlog"): the only pod, 40 s
// behind in its fan-out, restarts (a crash and a restore from the
// changelogs into an empty data dir, the dispatch as slow as before). Its
// partitions are measured from the announced time when they finished
// recovering, so the backlog it restarts with reads 0 and the HPA asks
// for the minimum for as long as it takes to drain. Measured (embedded
// broker): before the restart the gauge 40.0 s, 2 replicas asked; after
// it both partitions 39 s behind the announced time (watermarks 12:00:02,
// announced 12:00:41), the gauge 0.0 s, 1 replica asked.
func TestAdv19eRestartHidesTheBacklog(t *testing.T) {
	const partitions, jobs, burst = 2, 40, 40
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	prodA := &slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	regA := prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Producer, cfgA.Registerer = prodA, regA
	a := env.Start(cfgA)
	env.WaitApplied()
	at := t0
	tick := func() { at = at.Add(time.Second); env.Tick(at) }
	tick()
	first := at
	testenv.Eventually(t, 60*time.Second, func() error {
		for p, w := range a.Scheduler().Watermarks() {
			if !w.Equal(first) {
				return fmt.Errorf("partition %d watermark %s, want %s", p, w, first)
			}
		}
		if len(a.Scheduler().Watermarks()) != partitions {
			return fmt.Errorf("watermarks %v", a.Scheduler().Watermarks())
		}
		return nil
	})
	prodA.d.Store(int64(time.Second))
	for range burst {
		tick()
	}
	var before float64
	testenv.Eventually(t, 60*time.Second, func() error {
		if before = lateness(t, regA); before < burst/2 {
			return fmt.Errorf("gauge %.1f s, the backlog not read yet", before)
		}
		return nil
	})
	nBefore, _ := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: before}, 1)
	require.Greater(t, nBefore, int64(1), "setup: the backlog asks for more replicas (gauge %.1f s)", before)

	prodA.d.Store(0) // let the stopping pod finish its fan-out quickly
	a.Stop()
	prodR := &slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	prodR.d.Store(int64(time.Second))
	regR := prometheus.NewRegistry()
	cfgR := env.Config() // an empty data dir: a restore
	cfgR.Producer, cfgR.Registerer = prodR, regR
	r := env.Start(cfgR)
	var ws map[int32]time.Time
	testenv.Eventually(t, 60*time.Second, func() error {
		if ws = r.Scheduler().Watermarks(); len(ws) != partitions {
			return fmt.Errorf("watermarks %v", ws)
		}
		return nil
	})
	behind := 0.0
	for _, w := range ws {
		behind = max(behind, at.Sub(w).Seconds())
	}
	late := lateness(t, regR)
	n, _ := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late}, 1)
	t.Logf("before the restart: gauge %.1f s, %d replicas asked; after it: watermarks %v, up to %.0f s behind the announced time %s; gauge %.1f s, %d replicas asked",
		before, nBefore, ws, behind, at.Format(time.TimeOnly), late, n)
	require.Greater(t, behind, 2*lag.LatenessThreshold(time.Second), "setup: after the restart the partitions are still behind by more than two thresholds")
	require.GreaterOrEqual(t, late, behind-lag.LatenessThreshold(time.Second),
		"the partitions are %.0f s behind the announced time after the restart, but the gauge reads %.1f s: %d replicas asked, %d before",
		behind, late, n, nBefore)
}
