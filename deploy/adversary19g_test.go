//go:build adversary19g

package deploy

// Adversary round 19g on issue 19 (autoscaling on what makes fires late).
// Each test names the promise it breaks and the measurement; tagged, so
// that CI does not run them until the break is fixed:
//
//	go test -tags adversary19g -count=1 -v -run TestAdv19g ./deploy/
//
// (embedded broker only: run them one at a time.)

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv19gClockAheadRestartResetsStalled breaks "the clock-stalled alert
// fires when the clock stalls" for a cause the alerts name
// (deploy/prometheus/alerts.yml ChronosClockAhead: the clock table holds a
// time ahead of every tick, "a replay or simulated run with a negative
// --clock-max-ahead wrote a future time, or the broker's clock stepped
// back ... Nothing fires until the ticks pass that time;
// ChronosClockStalled follows"), through a pod restart (the 02b9588 rule,
// clock.AnnouncedAge.WithTable: "a restart during a stall reads the
// stall's age, not its own"). Before its first announced time a restarted
// pod reads the larger of its uptime and now minus the clock table's
// time; the table's time is in the future here, so that is its uptime;
// and the first announced time it then sees (its recovered watermark, the
// same future time) is dated max(now - t, 0) = now. So the restarted pod
// reads its own age, the rule's min by drops to it, and
// ChronosClockStalled's 2 min pending restarts with every pod restart
// (a crash loop, a rollout, or the operator following the runbook's
// "restart it"), for as long as the table stays ahead. This is not the
// documented slow-pod-clock limit: every pod's clock is right; the table
// is ahead. Here (embedded broker): 2 partitions, pods A and B with their
// wall clock simulated (starting at real time t0); tick t0, then a tick
// 10 min ahead (stamped so, as a replay's), so the table holds t0+10m;
// then 4 min pass with ticks t0+1 s ... dropped (control: both ages 4 min,
// Stalled); B restarts (same data dir), 10 s pass. Expected: B reads the
// stall's age (over the threshold), the system stays Stalled. Measured
// (embedded broker, 19 s): after 4m0s ages [4m0s 4m0s], Stalled; B
// restarted, 10 s later ages [4m10s 0s], not Stalled (the rule's min 0 s).
// ChronosClockAhead (warning) still fires on the owner; the critical page
// does not while pods restart. A stall with the table not ahead (a stuck
// owner, a stepped-back broker: the table's time is in the past) reads the
// stall's age after a restart (round 19f's fix).
//
//	go test -tags adversary19g -count=1 -v -run TestAdv19gClockAheadRestartResetsStalled ./deploy/
func TestAdv19gClockAheadRestartResetsStalled(t *testing.T) {
	const partitions = 2
	const ahead, stall, restart = 10 * time.Minute, 4 * time.Minute, 10 * time.Second
	env := testenv.New(t, partitions)
	t0 := time.Now().Truncate(time.Second)
	clk := deploytest.NewSimNow(t0)
	start := func(dir string) (*testenv.Instance, *prometheus.Registry, string) {
		reg := prometheus.NewRegistry()
		cfg := env.Config()
		if dir != "" {
			cfg.DataDir = dir
		}
		cfg.Registerer, cfg.Now = reg, clk.Now
		return env.Start(cfg), reg, cfg.DataDir
	}
	a, regA, _ := start("")
	b, regB, dirB := start("")
	env.WaitApplied()
	announced := func(want time.Time, is ...*testenv.Instance) {
		testenv.Eventually(t, 60*time.Second, func() error {
			for _, i := range is {
				ws := i.Scheduler().Watermarks()
				for p, w := range ws {
					if !w.Equal(want) {
						return fmt.Errorf("partition %d watermark %s, want %s", p, w, want)
					}
				}
			}
			return nil
		})
	}
	env.Tick(t0)
	announced(t0, a, b)
	deploytest.Ages(t, []*prometheus.Registry{regA, regB}) // a reading: the scrape drives the age
	future := t0.Add(ahead)
	env.Tick(future) // a replay's future time, stamped so
	announced(future, a, b)
	deploytest.Ages(t, []*prometheus.Registry{regA, regB})

	// The stall: every tick is behind the table and dropped.
	for k := 1; k <= 5; k++ {
		env.Tick(t0.Add(time.Duration(k) * time.Second))
	}
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	clk.Set(t0.Add(stall))
	before := deploytest.Ages(t, []*prometheus.Registry{regA, regB})
	res := []time.Duration{time.Second, time.Second}
	require.True(t, clock.Stalled(before, res), "setup: after %v with every tick dropped the system is Stalled (ages %v)", stall, before)

	// B restarts (a container restart keeps its data dir).
	b.Stop()
	b2, regB2, _ := start(dirB)
	_ = b2
	clk.Set(t0.Add(stall + restart))
	after := deploytest.Ages(t, []*prometheus.Registry{regA, regB2})
	t.Logf("the clock table %v ahead of the ticks: after %v ages %v (Stalled %v); pod B restarted, %v later ages %v (Stalled %v, the rule's min %.0f s)",
		ahead, stall, before, clock.Stalled(before, res), restart, after, clock.Stalled(after, res), minAge(after))
	require.True(t, clock.Stalled(after, res),
		"nothing has been announced for %v (the clock table %v ahead of every tick), but pod B, restarted %v ago, reads announced age %v: ChronosClockStalled's min by reads %.0f s and its pending resets",
		stall+restart, ahead, restart, after[1], minAge(after))
}
