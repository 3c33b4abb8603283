//go:build adversary19e

package deploy

// Round 19e's broker-clock step-back reproduction, kept under its tag: it
// needs a broker that takes the test's record timestamps (the embedded
// one); Apache Kafka stamps chronos-clock's records with its own append
// time, so the setup cannot be built there. The promise is kept untagged,
// on both brokers alike, by processors/clock TestAheadAfterBrokerClockStepsBack.
//
//	go test -tags adversary19e -count=1 -v -run TestAdv19eBrokerClockStepBack ./deploy/

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

// TestAdv19eBrokerClockStepBackHidesClockAhead breaks the ChronosClockAhead
// alert for one of the two causes it names (deploy/prometheus/alerts.yml,
// docs/operations.md "Clock stalled": "or when the broker's clock steps
// back (the chronos-clock leader moves to a broker whose clock is behind:
// every tick is bounded to that broker's time plus --clock-max-ahead)";
// chronos_clock_ahead_seconds: "above 0 for long: every tick is dropped
// ... the value is how long that takes"). The round-19d fix reads Ahead as
// 0 until the broker's time is AheadGrace (max(10 s, 3 x resolution)) past
// the owner's last announcement, by the broker's clock. When that clock
// stepped back by S, the broker's time passes the last announcement only
// S + 10 s later, while the ticks (bounded to the broker's time plus 1 s)
// pass the table's time after S - 1 s: for the whole stall the gauge reads
// 0, the ClockAhead alert cannot fire, and the runbook sends the operator
// to "a number rising on one instance: that owner is stuck, restart it"
// (chronos_clock_lag_seconds rises on the owner), which does not help.
// Here (embedded broker, whose record timestamps the test sets as the
// stepped-back broker's LogAppendTime would): the owner announces T0; then
// the chronos-clock leader's clock is 120 s behind, and the pods (their
// clocks right) tick T0+1 ... T0+90 s, each stamped by the broker 120 s
// earlier. Expected: Ahead over 0 (about 120 s less the elapsed time).
// Measured: 90 ticks dropped, nothing announced, the gauge 0.0 s at every
// reading. Embedded broker only: on Apache Kafka chronos-clock's
// LogAppendTime overrides the test's timestamps (the setup assertion
// fails there).
func TestAdv19eBrokerClockStepBackHidesClockAhead(t *testing.T) {
	const partitions, step, ticks = 2, 120 * time.Second, 90
	env := testenv.New(t, partitions)
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Registerer = reg
	a := env.Start(cfg)
	env.WaitApplied()
	t0 := time.Now().Truncate(time.Second)
	tickAt := func(at, broker time.Time) {
		env.Produce(string(env.Layout.Clock()), clock.TickKey, codecs.EncodeInternal(codecs.Tick{Time: at, Instance: "test"}), broker)
	}
	tickAt(t0, t0)
	testenv.Eventually(t, 60*time.Second, func() error {
		if got := a.Scheduler().Announced(); !got.Equal(t0) {
			return fmt.Errorf("announced %s, want %s", got, t0)
		}
		return nil
	})
	worst := 0.0
	for k := 1; k <= ticks; k++ {
		at := t0.Add(time.Duration(k) * time.Second)
		tickAt(at, at.Add(-step))
		if k%10 == 0 {
			env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
			worst = max(worst, deploytest.GaugeMax(t, clock.AheadMetric, reg))
		}
	}
	announced := a.Scheduler().Announced()
	t.Logf("the broker's clock %v behind: %d ticks (T0+1 s ... T0+%d s) dropped, announced still %s (T0 %s); %s at most %.1f s",
		step, ticks, ticks, announced.Format(time.TimeOnly), t0.Format(time.TimeOnly), clock.AheadMetric, worst)
	require.True(t, announced.Equal(t0), "setup: every tick was dropped, nothing announced")
	require.Greater(t, worst, 0.0, "the clock table is ahead of every tick for %d s (the broker's clock stepped back %v), but %s read 0 throughout: ChronosClockAhead cannot fire", ticks, step, clock.AheadMetric)
}
