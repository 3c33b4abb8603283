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
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/processors/clock"
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
// the restart). Measured: control ages [3m0s 3m0s], stalled; skewed
// [3m0s 0s], not stalled (the rule's min 0.0 s).
//
//	go test -tags adversary19f -count=1 -v -run TestAdv19fSlowPodClockRestartHidesStall ./deploy/
func TestAdv19fSlowPodClockRestartHidesStall(t *testing.T) {
	const partitions, jobs = 2, 10
	const stall, skew = 3 * time.Minute, 10 * time.Minute
	env := testenv.New(t, partitions)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	clk := deploytest.NewSimNow(t0)
	for i := range jobs {
		env.Put(fmt.Sprintf("job-%03d", i), codecs.JobDef{Every: "1s"}, t0)
	}
	start := func(now func() time.Time) (*testenv.Instance, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		cfg := env.Config()
		cfg.Registerer, cfg.Now = reg, now
		return env.Start(cfg), reg
	}
	a, regA := start(clk.Now)
	b, regB := start(clk.Now)
	env.WaitApplied()
	at := t0
	step := func() { at = at.Add(time.Second); clk.Set(at); env.Tick(at) }
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
	require.False(t, clock.Stalled(deploytest.Ages(t, []*prometheus.Registry{regA, regB}), res), "setup: on time, not stalled")

	// The clock stops announcing: the pods' clocks move on.
	last := at
	clk.Set(last.Add(stall))
	before := deploytest.Ages(t, []*prometheus.Registry{regA, regB})
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
			got = deploytest.Ages(t, []*prometheus.Registry{regA, reg})
			if got[1] < 0 {
				return fmt.Errorf("restarted pod's age not known yet")
			}
			return nil
		})
		return got
	}
	control := restart(clk.Now)
	stalledControl := clock.Stalled(control, res)
	skewed := restart(func() time.Time { return clk.Now().Add(-skew) })
	stalledSkewed := clock.Stalled(skewed, res)
	t.Logf("nothing announced for %v (last %s): ages before %v; pod B restarted with a right clock: ages %v, stalled %v; restarted with a clock %v slow: ages %v, stalled %v (the rule's min %.1f s)",
		stall, last.Format(time.TimeOnly), before, control, stalledControl, skew, skewed, stalledSkewed, minAge(skewed))
	require.True(t, stalledControl, "setup: a restart with a right clock keeps the stall (round 19d)")
	require.True(t, stalledSkewed,
		"the clock has announced nothing for %v, but pod B, restarted with a wall clock %v slow, reads announced age %v: ChronosClockStalled's min by reads %.1f s and the alert resets",
		stall, skew, skewed[1], minAge(skewed))
}
