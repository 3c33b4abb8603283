package processors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// backfillCount counts job id's backfill events with scheduled_at in
// [from, to), failing on one outside it or a fire_id that is not its time's.
func backfillCount(t *testing.T, c *testenv.Collector, id string, from, to time.Time) int {
	t.Helper()
	n := 0
	for _, d := range c.Dispatches(t) {
		if d.JobID != id || !d.Backfill || d.ScheduledAt.Before(from) || !d.ScheduledAt.Before(to) {
			continue
		}
		require.Equal(t, codecs.ScheduledFireID(id, d.ScheduledAt), d.FireID)
		require.Equal(t, codecs.TriggerSchedule, d.Trigger)
		require.Equal(t, `{"n":7}`, string(d.Payload))
		n++
	}
	return n
}

// TestBackfillRatePauseCancel drives a backfill with the simulated clock on
// the embedded broker (and Apache Kafka with CHRONOS_TEST_BROKERS): at
// --backfill-rate 5 each one-second advance of the shard dispatches
// exactly 5 more fires of the range, none while the job is paused (after
// the steps of those advances were consumed), the rest after its resume;
// a cancelled backfill dispatches nothing more. Each step's effect is
// waited for before the next tick, so the counts are exact.
func TestBackfillRatePauseCancel(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.Fanout.BackfillRate = 5
	env.Start(cfg)
	const id = "bf"
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	env.Put(id, codecs.JobDef{Every: "10s", Payload: []byte(`{"n":7}`)}, t0)
	now := t0
	tick := func() {
		now = now.Add(time.Second)
		env.Tick(now)
		waitAdvanced(env)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerBackfill()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	}
	command := func(op string, from, to time.Time) {
		m := codecs.CommandMsg{Op: op, ID: id}
		if op == codecs.OpBackfill {
			m.From, m.To = from.Format(time.RFC3339), to.Format(time.RFC3339)
		}
		b, err := codecs.EncodeCommand(m)
		require.NoError(t, err)
		env.Produce(string(env.Layout.Jobs()), id, b, now)
		env.WaitApplied()
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	}
	waitCount := func(from, to time.Time, want int) {
		t.Helper()
		testenv.Eventually(t, time.Minute, func() error {
			got := backfillCount(t, dispatch, id, from, to)
			require.LessOrEqual(t, got, want, "more backfill fires than the rate allows")
			if got < want {
				return fmt.Errorf("%d of %d backfill fires", got, want)
			}
			return nil
		})
	}
	tick()

	// 1. Rate: 100 times, 5 per second of shard time.
	from1, to1 := t0.Add(-1000*time.Second), t0
	command(codecs.OpBackfill, from1, to1)
	for k := 1; k <= 20; k++ {
		tick()
		waitCount(from1, to1, 5*k)
	}
	tick()
	waitCount(from1, to1, 100)

	// 2. Pause: no step while paused, the rest after the resume.
	from2, to2 := t0.Add(-2000*time.Second), from1
	command(codecs.OpBackfill, from2, to2)
	tick()
	waitCount(from2, to2, 5)
	command(codecs.OpPause, time.Time{}, time.Time{})
	for range 3 {
		tick()
	}
	require.Equal(t, 5, backfillCount(t, dispatch, id, from2, to2), "a paused job's backfill went on")
	command(codecs.OpResume, time.Time{}, time.Time{})
	for k := 1; k <= 19; k++ {
		tick()
		waitCount(from2, to2, 5+5*k)
	}

	// 3. Cancel: nothing more after it.
	from3, to3 := t0.Add(-3000*time.Second), from2
	command(codecs.OpBackfill, from3, to3)
	tick()
	waitCount(from3, to3, 5)
	command(codecs.OpCancelBackfill, time.Time{}, time.Time{})
	for range 3 {
		tick()
	}
	require.Equal(t, 5, backfillCount(t, dispatch, id, from3, to3), "a cancelled backfill went on")

	// Every range's fires are each there once (no step repeated here).
	seen := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		if d.Backfill {
			seen[d.FireID]++
		}
	}
	require.Len(t, seen, 100+100+5)
	for fid, n := range seen {
		require.Equal(t, 1, n, fid)
	}
}
