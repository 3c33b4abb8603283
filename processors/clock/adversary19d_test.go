package clock

// Adversary round 19d on issue 19, promise "the clock-stalled alert still
// fires when the clock stalls" (docs/operations.md "Clock stalled",
// deploy/prometheus/alerts.yml ChronosClockStalled). The alert is the
// smallest chronos_clock_announced_age_seconds of the system over
// max(60 s, 3 x resolution), and an instance's age counts "from when it
// was made until the first announcement it sees" (AnnouncedAge). So an
// instance that restarts during a stall reads a young age, and as long as
// one instance restarts more often than every 60 s the minimum never
// passes the threshold: the alert stays silent for the whole stall. The
// alert's own description names "instances restarting" as a cause of a
// stalled clock (the clock group keeps rebalancing), so the instance that
// causes the stall is the one that hides it. The shipped docker-compose.yml
// (the deployment whose job="chronos" the rule groups by) runs the
// instances with restart: unless-stopped, and Docker restarts a container
// that ran 10 s or more at once (its back-off resets), and a
// pod that crashes after its startup (restore, then an OOM at the first
// burst) is back within seconds the first few times. Fixed: an instance's
// age is unknown (NaN, skipped by min) until it has seen an announced
// time, and the first it sees is aged by the wall clock.
//
//	go test -count=1 -v -run TestAdv19d ./processors/clock/

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv19dRestartingInstanceSilencesStalledAlert: 3 instances at 1 s
// resolution; the clock announces nothing from the start of the run (every
// instance saw the last announcement before). One instance restarts every
// R s (generated, 15..150 s), down 5 s each time (no series while down).
// Prometheus evaluates the alert expression (Stalled, the Go form of
// StalledExpr, TestClockStalledAlertIsStalledExpr) every 15 s with
// `for: 2m`. Expected: the alert fires within StalledThreshold + 2m + two
// evaluations of the stall's start, as it does without restarts (the
// control case: 3m15s). Measured: every R under about 3 min (the 60 s
// threshold plus the 2 min `for`, which a restart resets) keeps it silent
// for the whole 30 min stall; only R of 3 min and more fire.
func TestAdv19dRestartingInstanceSilencesStalledAlert(t *testing.T) {
	const (
		instances = 3
		down      = 5 * time.Second
		eval      = 15 * time.Second
		forDur    = 2 * time.Minute
		stall     = 30 * time.Minute
	)
	res := time.Second
	deadline := StalledThreshold(res) + forDur + 2*eval
	rng := rand.New(rand.NewSource(19))
	var silent []string
	for c := range 25 {
		every := time.Duration(15+rng.Intn(286)) * time.Second
		if c == 0 {
			every = 10 * stall // the control: no restart, the alert fires
		}
		clk := &fakeNow{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		last := clk.now().Add(-time.Second) // the last announcement, before the stall
		ages := make([]*AnnouncedAge, instances)
		seen := make([]time.Time, instances) // what each instance's scheduler consumed
		for i := range ages {
			i := i
			seen[i] = last
			ages[i] = NewAnnouncedAge(func() time.Time { return seen[i] }, clk.now)
			ages[i].Age() // a scrape before the stall saw the last announcement
		}
		start := clk.now()
		upAt, downAt := time.Time{}, start.Add(every) // instance 0's next restart
		var pendingSince time.Time
		fired := time.Duration(-1)
		for clk.now().Sub(start) < stall {
			clk.add(eval)
			now := clk.now()
			if !now.Before(downAt) { // instance 0 stops: no series until it is back
				upAt, downAt = downAt.Add(down), downAt.Add(every)
			}
			var gotAges, gotRes []time.Duration
			for i, a := range ages {
				if i == 0 && now.Before(upAt) {
					continue
				}
				if i == 0 && !upAt.IsZero() && a.mu.since.Before(upAt.Add(-down)) {
					// The restarted process: a new AnnouncedAge made at its start,
					// its scheduler has consumed nothing yet.
					seen[0] = time.Time{}
					ages[0] = NewAnnouncedAge(func() time.Time { return seen[0] }, func() time.Time { return upAt })
					ages[0].now = clk.now
					if c%2 == 1 {
						// As the instance makes it: the clock table, read
						// before the scheduler starts, holds the last
						// announcement (adversary 19f).
						ages[0].WithTable(func() time.Time { return last })
					}
					a = ages[0]
				}
				gotAges, gotRes = append(gotAges, a.Age()), append(gotRes, res)
			}
			if Stalled(gotAges, gotRes) {
				if pendingSince.IsZero() {
					pendingSince = now
				}
				if now.Sub(pendingSince) >= forDur {
					fired = now.Sub(start)
					break
				}
			} else {
				pendingSince = time.Time{}
			}
		}
		t.Logf("one instance restarting every %4.0f s: alert fired after %v (want within %v)", every.Seconds(), fired, deadline)
		if c == 0 {
			require.True(t, fired >= 0 && fired <= deadline, "control: without restarts the alert fires in time (%v)", fired)
			continue
		}
		if fired < 0 || fired > deadline {
			silent = append(silent, fmt.Sprintf("every %.0f s: %v", every.Seconds(), fired))
		}
	}
	require.Empty(t, silent, "the clock announced nothing for %v and ChronosClockStalled did not fire in time (-1: never) while one instance restarted: its age counts from its start, so the minimum stays under %v", stall, StalledThreshold(res))
}
