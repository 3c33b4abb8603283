//go:build adversary22

package deploy

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAdv22StuckAfterScaleStepHiddenByScrapeInterval (adversary 22, fixed:
// CaughtUp is latched when an advance completes, Scheduler.noteCaughtUp;
// tagged: 72 s, and its 2 s margin needs B on time within 2 s of ready,
// which a loaded CI machine does not promise): a pod B joins (scale
// step), its partitions recover and catch up, then its fan-out gets stuck
// (every dispatch produce blocks 20 s) 2 s after it is ready. 9 s after it
// is ready (within the 10 s grace) the gauge is read once. With a scrape
// every 100 ms before (the deploy tests' sampling) the caught-up partition
// reads its stuck backlog; with no scrape before (Prometheus at the
// ServiceMonitor's shipped 30 s interval) the same history read 0 before
// the fix (embedded broker and Apache Kafka: 7.0 s against 0.0 s):
// CaughtUp was latched only by a scrape that saw watermark >= known.
//
//	go test -tags adversary22 -count=1 -v -run TestAdv22StuckAfterScaleStepHiddenByScrapeInterval ./deploy/
func TestAdv22StuckAfterScaleStepHiddenByScrapeInterval(t *testing.T) {
	for _, frequent := range []bool{true, false} {
		t.Run(fmt.Sprintf("frequent=%v", frequent), func(t *testing.T) {
			const partitions = 4
			env := testenv.New(t, partitions)
			now := time.Now()
			n := map[int32]int{}
			for i := 0; n[0]+n[2] < 200; i++ {
				k := fmt.Sprintf("job-%05d", i)
				if p := topology.Partition(k, partitions); p%2 == 0 && n[p] < 100 {
					n[p]++
					env.Put(k, codecs.JobDef{Every: "1s"}, now)
				}
			}
			cfgA := env.Config()
			cfgA.Clock.NoTicker = false
			cfgA.Registerer = prometheus.NewRegistry()
			env.Start(cfgA)
			env.WaitApplied()
			time.Sleep(3 * time.Second) // A on time, not a wait for an effect

			prodB := &deploytest.Slow{Producer: scheduler.KgoProducer{Client: env.Client}}
			regB := prometheus.NewRegistry()
			cfgB := env.Config()
			cfgB.Clock.NoTicker = false
			cfgB.Producer, cfgB.Registerer = prodB, regB
			b := env.Start(cfgB)
			ready := time.Now()
			stuckAt := ready.Add(2 * time.Second)
			readAt := ready.Add(9 * time.Second)
			stuck := false
			max0 := 0.0
			for time.Now().Before(readAt) {
				if !stuck && time.Now().After(stuckAt) {
					prodB.SetDelay(20 * time.Second)
					stuck = true
				}
				if frequent {
					max0 = max(max0, deploytest.Lateness(t, regB))
				}
				time.Sleep(100 * time.Millisecond) // a sampling rate
			}
			v := deploytest.Lateness(t, regB)
			parts := b.Scheduler().Partitions()
			for p, pt := range parts {
				t.Logf("B partition %d: watermark %s, recovered %.1f s before the read, caught up %v, restore %s",
					p, pt.Watermark.Format("15:04:05"), time.Since(pt.RecoveredAt).Seconds(), pt.CaughtUp, pt.Restore)
			}
			t.Logf("frequent scrapes %v: reading 9 s after B ready: %.1f s (max before %.1f), clock table %s",
				frequent, v, max0, b.Scheduler().Announced().Format("15:04:05"))
			prodB.SetDelay(0)
			require.Greater(t, v, lag.LatenessThreshold(time.Second), "B's partition stuck since 7 s reads its backlog")
		})
	}
}
