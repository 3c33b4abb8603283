//go:build adversary19d

package deploy

// Adversary round 19d on issue 19 (autoscaling on what makes fires late).
// Each test names the promise it breaks and keeps its measurement.
//
//	go test -tags adversary19d -count=1 -v -run TestAdv19d ./deploy/
//
// (and on Apache Kafka with CHRONOS_TEST_BROKERS=host:port).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
)

// hang is a dispatch producer that, once armed, blocks every produce until
// released: a pod whose path to the dispatch broker hangs (a half-open
// connection, a partitioned node), so every partition it owns is stuck in
// its fan-out, while the other pods dispatch.
type hang struct {
	scheduler.Producer
	armed   atomic.Bool
	open    chan struct{}
	blocked atomic.Int64
}

func (h *hang) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	if h.armed.Load() {
		h.blocked.Add(1)
		select {
		case <-h.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Producer.ProduceSync(ctx, topic, msgs)
}

// TestAdv19dStuckPodAsksForTheMinimum breaks "a fan-out that is truly
// behind (stuck callback, one slow partition) asks for more replicas"
// (docs/operations.md "Autoscaling", keda-scaledobject.yaml: the lateness
// trigger "sees the fan-out behind: ... a partition stuck while its pod's
// others go on"). The lateness gauge measures a partition against the
// announced time its own pod consumed, so a pod whose every partition is
// stuck freezes its own yardstick: its partitions read 0-1 s however far
// behind they fall, while the system's announced time (the other pods')
// runs on. The stall alert does not see it either (the smallest age of the
// system counts: the healthy pod's is 0). Here: 4 partitions, 2 pods, 40
// jobs every second; pod A's dispatch hangs; the clock advances 30 s.
// Scaling out would help (the rebalance a scale step starts evicts the
// stuck member after its rebalance timeout, and its partitions move to
// pods that dispatch); instead the system asks for the minimum, and with
// 2 replicas running the HPA would scale down. Measured (embedded broker):
// pod A's 2 partitions 30 s behind the announced time, the gauge's worst
// 1.0 s, 1 replica asked.
func TestAdv19dStuckPodAsksForTheMinimum(t *testing.T) {
	const partitions, jobs = 4, 40
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) // simulated time
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	h := &hang{Producer: scheduler.KgoProducer{Client: env.Client}, open: make(chan struct{})}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfgA := env.Config()
	cfgA.Producer, cfgA.Registerer = h, regA
	a := env.Start(cfgA)
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(h.open) }) })
	cfgB := env.Config()
	cfgB.Registerer = regB
	b := env.Start(cfgB)
	env.WaitApplied()

	at := t0
	tick := func() { at = at.Add(time.Second); env.Tick(at) }
	tick()
	first := at
	owned := func() (map[int32]time.Time, map[int32]time.Time) {
		return a.Scheduler().Watermarks(), b.Scheduler().Watermarks()
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		wa, wb := owned()
		if len(wa) == 0 || len(wb) == 0 || len(wa)+len(wb) != partitions {
			return fmt.Errorf("partitions of A %v, of B %v", wa, wb)
		}
		for _, ws := range []map[int32]time.Time{wa, wb} {
			for p, w := range ws {
				if !w.Equal(first) {
					return fmt.Errorf("partition %d watermark %s, want %s", p, w, first)
				}
			}
		}
		return nil
	})
	late := lateness(t, regA, regB)
	n, _ := so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late}, 2)
	require.Equal(t, int64(1), n, "caught up: the minimum (lateness %.1f)", late)

	// Pod A's dispatch hangs; the clock advances 30 s, pod B keeps up.
	h.armed.Store(true)
	for range 30 {
		tick()
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		if got := b.Scheduler().Announced(); !got.Equal(at) {
			return fmt.Errorf("B announced %s, want %s", got, at)
		}
		for p, w := range b.Scheduler().Watermarks() {
			if !w.Equal(at) {
				return fmt.Errorf("B's partition %d watermark %s, want %s", p, w, at)
			}
		}
		return nil
	})
	require.Positive(t, h.blocked.Load(), "setup: pod A's fan-out is stuck")
	wa, _ := owned()
	behind := 0.0
	for _, w := range wa {
		behind = max(behind, at.Sub(w).Seconds())
	}
	late = lateness(t, regA, regB)
	n, _ = so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late}, 2)
	t.Logf("pod A's %d partitions up to %.0f s behind the announced time %s (watermarks %v); A announced %s; gauge's worst %.1f s; %d replicas asked",
		len(wa), behind, at.Format(time.TimeOnly), wa, a.Scheduler().Announced().Format(time.TimeOnly), late, n)
	require.GreaterOrEqual(t, behind, 29.0, "setup: pod A's partitions are behind")
	require.Greater(t, n, int64(1), "pod A's partitions are %.0f s behind the announced time, but the lateness trigger reads %.1f s (A's own announced time froze with its fan-out): %d replica asked",
		behind, late, n)
}
