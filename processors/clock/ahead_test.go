package clock

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lovoo/goka/tester"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAheadAfterBrokerClockStepsBack keeps, whatever the broker, the case
// of adversary round 19e (issue 19; deploy/adversary19e_test.go
// TestAdv19eBrokerClockStepBackHidesClockAhead, which runs on the embedded
// broker only: Apache Kafka stamps chronos-clock's records with its own
// append time, so a test cannot step it back). The chronos-clock leader
// moves to a broker whose clock is S behind: every tick is bounded to that
// broker's time + 1 s, behind the last announcement, and dropped. The
// grace that keeps a slow pod's dropped ticks from reading as a table
// ahead is measured on the broker's clock, so a broker time before the
// last announcement's must end it at once: ChronosClockAhead reads the
// stall for its whole length. The controls: a slow pod's tick appended
// after the announcement, within the grace, reads 0; after the grace, the
// table ahead reads.
func TestAheadAfterBrokerClockStepsBack(t *testing.T) {
	for _, step := range []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute, time.Hour} {
		layout := topology.Layout{Partitions: 2, Replication: -1}
		tt, c := startClock(t, Config{Layout: layout, Resolution: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		tick := func(at, broker time.Time) {
			tt.Consume(string(layout.Clock()), TickKey, codecs.EncodeInternal(codecs.Tick{Time: at, Instance: "h"}), tester.WithTime(broker))
		}
		t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		tick(t0, t0)
		require.True(t, c.LastAnnounced().Equal(t0), "setup: announced")

		// A slow pod's tick, appended 0.2 s after the announcement: within
		// the grace, not a table ahead.
		tick(t0.Add(-2*time.Minute), t0.Add(200*time.Millisecond))
		require.Zero(t, c.Ahead(), "a slow pod's tick within the grace")

		// The broker's clock steps back by step: its ticks are bounded
		// to its time + 1 s and dropped.
		worst := time.Duration(0)
		for k := 1; k <= 5; k++ {
			broker := t0.Add(time.Duration(k) * time.Second).Add(-step)
			tick(broker.Add(time.Second), broker)
			worst = max(worst, c.Ahead())
		}
		require.True(t, c.LastAnnounced().Equal(t0), "step %v: every tick dropped", step)
		require.Positive(t, worst, "step %v: the broker's clock stepped back, the table is ahead of every tick, and Ahead read 0", step)
		require.LessOrEqual(t, worst, step, "step %v: Ahead is at most the step", step)
	}
}
