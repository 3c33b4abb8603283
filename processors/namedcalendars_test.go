package processors_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestNamedCalendarFollowsChanges: a daily job excludes the calendar
// "holidays" (its own record on chronos-calendars). It skips the dates the
// calendar holds when each time is due; once the calendar changes (one
// date removed, another added) the job follows from its next time on, in
// both directions, with one fire_id per fire and nothing counted missed.
func TestNamedCalendarFollowsChanges(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 3)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	inst := env.Start(env.Config())
	cals := string(env.Layout.Calendars())
	t0 := time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC)
	setCalendar := func(dates ...string) {
		env.Produce(cals, "holidays", codecs.EncodeCalendarDef(codecs.CalendarDef{Dates: dates}), t0)
		last, err := schedule.ParseDate(dates[len(dates)-1])
		require.NoError(t, err)
		require.Eventually(t, func() bool { return inst.Calendars().HasDate("holidays", last) }, time.Minute, 10*time.Millisecond)
	}
	// 09:00 in Berlin (08:00 UTC, 07:00 UTC from Mar 29); Mar 28 and 29
	// are holidays at first.
	setCalendar("2026-03-28", "2026-03-29")
	env.Tick(t0)
	env.Put("daily", codecs.JobDef{Cron: "0 9 * * *", TZ: "Europe/Berlin", MisfireGrace: "30m",
		Exclude: &codecs.ExcludeDef{Calendars: []string{"holidays"}}}, t0)
	env.WaitApplied()
	ticks := func(from, to time.Time) {
		var recs []*kgo.Record
		for at := from.Add(10 * time.Minute); !at.After(to); at = at.Add(10 * time.Minute) {
			recs = append(recs, &kgo.Record{Topic: string(env.Layout.Clock()), Key: []byte(clock.TickKey),
				Value: codecs.EncodeInternal(codecs.Tick{Time: at}), Timestamp: at})
		}
		require.NoError(t, env.Client.ProduceSync(t.Context(), recs...).FirstErr())
		env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	}
	// Through Mar 28: Mar 27 fires, Mar 28 is a holiday.
	mid := time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC)
	ticks(t0, mid)
	dispatch.WaitLen(t, 1, time.Minute)
	// Mar 29 is no longer a holiday, Mar 30 now is: through Apr 1 the job
	// fires Mar 29 and 31.
	setCalendar("2026-03-28", "2026-03-30")
	end := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	ticks(mid, end)
	dispatch.WaitLen(t, 3, time.Minute)

	var got []string
	for _, d := range dispatch.Dispatches(t) {
		require.Zero(t, d.Missed, d.FireID)
		require.Equal(t, codecs.ScheduledFireID(d.JobID, d.ScheduledAt), d.FireID)
		got = append(got, d.ScheduledAt.UTC().Format(time.RFC3339))
	}
	slices.Sort(got)
	require.Equal(t, []string{"2026-03-27T08:00:00Z", "2026-03-29T07:00:00Z", "2026-03-31T07:00:00Z"}, got)
}
