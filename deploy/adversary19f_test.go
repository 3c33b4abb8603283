//go:build adversary19f

package deploy

// Adversary round 19f on issue 19 (autoscaling on what makes fires late).
// Each test names the promise it breaks and the measurement; tagged, so
// that CI does not run them until the break is fixed:
//
//	go test -tags adversary19f -count=1 -v -run TestAdv19f ./deploy/
//
// (embedded broker; CHRONOS_TEST_BROKERS=host:port for Apache Kafka).

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/processors/scheduler"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv19fSlowPodClockRestartHidesStall breaks "the clock-stalled alert
// still fires when the clock stalls" (deploy/prometheus/alerts.yml
// ChronosClockStalled; clock.AnnouncedAge: "a stall that began before this
// instance started counts from its start, not the instance's", the round
// 19d fix for "a restart resets the system's smallest age") for a pod whose
// wall clock is behind (clock skew; the brief's "clock skew either way").
// The first announced time an instance sees is dated by its wall clock,
// max(now - t, 0): a pod whose clock is S behind, started during a stall
// younger than S, reads age 0 and the system's minimum (the rule's min by)
// is 0 again: the pending alert resets, and every such restart (a rollout,
// a crash loop, the rebalancing the runbook names) starts it over. The
// AnnouncedAge comment accepts this ("a skewed wall clock matters only
// while the clock is stalled anyway"), but a stall is exactly when the
// alert has to fire; the lateness gauge, by contrast, is promised to be
// independent of a skewed pod clock.
// Here (embedded broker): 2 partitions, 2 pods, their wall clocks simulated
// with the announced time; the clock stops announcing for 3 simulated
// minutes (both ages 180 s: stalled). Control: pod B restarts (empty data
// dir, a restore) with a right clock: still stalled. Then it restarts with
// a clock 10 min slow. Expected: still stalled (the stall is older than
// the restart). Measured: see the log line.
func TestAdv19fSlowPodClockRestartHidesStall(t *testing.T) {
	const partitions, jobs = 2, 10
	const stall, skew = 3 * time.Minute, 10 * time.Minute
	env := testenv.New(t, partitions)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	clk := &simNow{t: t0}
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	start := func(now func() time.Time) (*testenv.Instance, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		cfg := env.Config()
		cfg.Registerer, cfg.Now = reg, now
		return env.Start(cfg), reg
	}
	a, regA := start(clk.now)
	b, regB := start(clk.now)
	env.WaitApplied()
	at := t0
	step := func() { at = at.Add(time.Second); clk.set(at); env.Tick(at) }
	for range 3 {
		step()
	}
	owned := func(insts ...*testenv.Instance) error {
		n := 0
		for _, in := range insts {
			for p, w := range in.Scheduler().Watermarks() {
				if !w.Equal(at) {
					return fmt.Errorf("partition %d watermark %s, want %s", p, w, at)
				}
				n++
			}
		}
		if n != partitions {
			return fmt.Errorf("%d partitions owned", n)
		}
		return nil
	}
	testenv.Eventually(t, 60*time.Second, func() error { return owned(a, b) })
	res := []time.Duration{time.Second, time.Second}
	require.False(t, clock.Stalled(ages(t, []*prometheus.Registry{regA, regB}), res), "setup: on time, not stalled")

	// The clock stops announcing: the pods' clocks move on.
	last := at
	clk.set(last.Add(stall))
	before := ages(t, []*prometheus.Registry{regA, regB})
	require.True(t, clock.Stalled(before, res), "setup: %v without an announcement is a stall (ages %v)", stall, before)

	restart := func(now func() time.Time) []time.Duration {
		b.Stop()
		var reg *prometheus.Registry
		b, reg = start(now)
		var got []time.Duration
		testenv.Eventually(t, 60*time.Second, func() error {
			if len(b.Scheduler().Watermarks()) == 0 {
				return fmt.Errorf("restarted pod owns no recovered partition yet")
			}
			got = ages(t, []*prometheus.Registry{regA, reg})
			if got[1] < 0 {
				return fmt.Errorf("restarted pod's age not known yet")
			}
			return nil
		})
		return got
	}
	control := restart(clk.now)
	stalledControl := clock.Stalled(control, res)
	skewed := restart(func() time.Time { return clk.now().Add(-skew) })
	stalledSkewed := clock.Stalled(skewed, res)
	t.Logf("nothing announced for %v (last %s): ages before %v; pod B restarted with a right clock: ages %v, stalled %v; restarted with a clock %v slow: ages %v, stalled %v (the rule's min %.1f s)",
		stall, last.Format(time.TimeOnly), before, control, stalledControl, skew, skewed, stalledSkewed, minAge(skewed))
	require.True(t, stalledControl, "setup: a restart with a right clock keeps the stall (round 19d)")
	require.True(t, stalledSkewed,
		"the clock has announced nothing for %v, but pod B, restarted with a wall clock %v slow, reads announced age %v: ChronosClockStalled's min by reads %.1f s and the alert resets",
		stall, skew, skewed[1], minAge(skewed))
}

// TestAdv19fSlowBucketFanOutAsksForTheMinimum breaks "a fan-out that is
// truly behind (burst of due jobs, slow partition) asks for more replicas"
// (docs/operations.md "Autoscaling": the lateness trigger grows when "the
// fan-out is slow ...: a burst of due jobs, a slow dispatch broker"; the
// issue's promise) for the fan-out of a bucket trigger (docs/topics.md: a
// bucket trigger fires every active job of the bucket at once). A bucket's
// fan-out runs one chunk per callback through the loopback, between the
// advances: the advances (nothing due on them) complete at once, so every
// watermark keeps up with the announced time and the lateness gauge reads
// under a second while the bucket's fires wait; no trigger sees them (no
// command waits on chronos-jobs, the loopback's lag has no trigger since
// round 19c, the fire rate is what the slow fan-out manages). The same
// fires due by schedule instead ask for 2 replicas within seconds
// (TestShippedScaledObjectSeesASlowFanOut, same slow producer and
// chunking). Here (embedded broker): 2 partitions, 1 pod with a live
// clock, 40 jobs in bucket tenant-a (every 24h: none due by schedule), one
// job per chunk, a dispatch taking 1 s per produce (the project's model of
// a slow broker or a CPU-bound fan-out, deploy/lateness_test.go slow); one
// bucket trigger. Expected: once the oldest undispatched bucket fire has
// waited over two lateness thresholds (10 s), the shipped ScaledObject asks
// for more than 1 replica. Measured: see the log line.
func TestAdv19fSlowBucketFanOutAsksForTheMinimum(t *testing.T) {
	const partitions, jobs = 2, 40
	env := testenv.New(t, partitions)
	so := shippedFor(t, env)
	adm := admin(t, env)
	now := time.Now()
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "24h", Bucket: "tenant-a"}, now)
	}
	prod := &slow{Producer: scheduler.KgoProducer{Client: env.Client}}
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Clock.NoTicker = false // a live clock: one advance per partition per second
	cfg.Producer, cfg.Registerer = prod, reg
	cfg.Fanout.ChunkSize = 1
	cfg.Fanout.Budget = 50 * time.Millisecond
	a := env.Start(cfg)
	env.WaitApplied()
	testenv.Eventually(t, 60*time.Second, func() error {
		ws := a.Scheduler().Watermarks()
		if len(ws) != partitions {
			return fmt.Errorf("watermarks %v", ws)
		}
		for p, w := range ws {
			if w.IsZero() {
				return fmt.Errorf("partition %d has no watermark yet", p)
			}
		}
		return nil
	})
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	prod.d.Store(int64(time.Second))
	sent := time.Now()
	env.Produce(string(env.Layout.BucketTriggers()), "tenant-a", []byte(`{"v":1,"bucket":"tenant-a","trigger_id":"t-1"}`), sent)

	// Sample until the oldest undispatched fire has waited 15 s (or all
	// are out).
	var waited, late, worstLate float64
	var n, worstN int64
	var out int
	for {
		time.Sleep(250 * time.Millisecond) // a sampling rate, not a wait for an effect
		out = dispatch.Len()
		waited = time.Since(sent).Seconds()
		late = lateness(t, reg)
		worstLate = max(worstLate, late)
		rate := float64(out) / waited // the fires per second so far, the load trigger's input
		n, _ = so.ReplicasWith(measure(t, adm, so), lag.Observed{Lateness: late, FireRate: rate}, 1)
		worstN = max(worstN, n)
		if out >= jobs || waited >= 15 {
			break
		}
	}
	t.Logf("one bucket trigger of %d jobs at %s: after %.1f s %d fires dispatched, %d waiting (the oldest %.1f s); the lateness gauge at most %.2f s (now %.2f s); the shipped ScaledObject asked for at most %d replica(s)",
		jobs, sent.Format(time.TimeOnly), waited, out, jobs-out, waited, worstLate, late, worstN)
	require.Less(t, out, jobs, "setup: the bucket's fan-out is still behind")
	require.Greater(t, waited, 2*lag.LatenessThreshold(time.Second), "setup: the oldest fire has waited over two thresholds")
	require.Greater(t, worstN, int64(1),
		"%d bucket fires have waited up to %.1f s for a slow fan-out, but the lateness gauge read at most %.2f s and the shipped ScaledObject asked for %d replica(s)",
		jobs-out, waited, worstLate, worstN)
}
