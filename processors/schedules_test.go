package processors_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestSeveralSchedulesAndExclusionsFire puts jobs with several schedules
// and exclusions on the embedded broker, drives the simulated clock across
// Lord Howe Island's 30-minute fall-back (Apr 5 2026) and Berlin's spring
// forward (Mar 29), and requires exactly the fires of the members'
// oracle times (schedule/testdata/oracle.py, each member alone), merged
// once per instant and without the excluded dates and ranges: one
// fire_id each, none counted as missed.
func TestSeveralSchedulesAndExclusionsFire(t *testing.T) {
	t.Parallel()
	const lh = "Australia/Lord_Howe"
	t0 := time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC)
	t1 := time.Date(2026, 4, 8, 0, 0, 0, 0, time.UTC)
	type member struct {
		cron, tz, overlap string
		every             time.Duration
	}
	jobs := []struct {
		id      string
		tz      string
		members []member
		dates   []string
		ranges  [][2]time.Time
	}{
		{"lh-union", lh, []member{{cron: "0 0 L * *", tz: lh}, {cron: "45 1 * * 0#1", tz: lh, overlap: "both"}, {cron: "0 9 * * *", tz: lh}},
			[]string{"2026-03-30", "2026-04-06"}, [][2]time.Time{{time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 3, 0, 0, 0, 0, time.UTC)}}},
		// Berlin 09:00 and London 08:00 are one instant all year: one fire.
		{"same-instant", "Europe/Berlin", []member{{cron: "0 9 * * *", tz: "Europe/Berlin"}, {cron: "0 8 * * *", tz: "Europe/London"}, {every: 12 * time.Hour}},
			[]string{"2026-03-29"}, nil},
	}
	type fire struct {
		job string
		at  int64
	}
	var want []fire
	for _, j := range jobs {
		var times []int64
		for _, m := range j.members {
			if m.every > 0 {
				for at := t0.Truncate(m.every); !at.After(t1); at = at.Add(m.every) {
					times = append(times, at.Unix())
				}
				continue
			}
			times = append(times, pythonOracle(t, m.cron, m.tz, "", m.overlap, t0, t1.Add(time.Second))...)
		}
		slices.Sort(times)
		times = slices.Compact(times)
		loc, err := time.LoadLocation(j.tz)
		require.NoError(t, err)
		for _, u := range times {
			at := time.Unix(u, 0)
			if !at.After(t0) || at.After(t1) { // a put at t0 owes the times after it; ticks run to t1
				continue
			}
			if slices.Contains(j.dates, at.In(loc).Format(time.DateOnly)) ||
				slices.ContainsFunc(j.ranges, func(r [2]time.Time) bool { return !at.Before(r[0]) && at.Before(r[1]) }) {
				continue
			}
			want = append(want, fire{j.id, u})
		}
	}
	count := map[string]int{}
	for _, f := range want {
		count[f.job]++
	}
	for _, at := range []time.Time{time.Date(2026, 4, 4, 14, 45, 0, 0, time.UTC), time.Date(2026, 4, 4, 15, 15, 0, 0, time.UTC)} {
		require.Contains(t, want, fire{"lh-union", at.Unix()}, "overlap both fires 01:45 twice on Apr 5, 30 minutes apart")
	}
	require.Equal(t, 11+24-2, count["same-instant"], "(Mar 27 00:00, Apr 8 00:00]: 11 daily fires (Mar 29 excluded) and 24 twice-daily, without the two on Mar 29")
	t.Logf("%d jobs, %d expected fires", len(jobs), len(want))

	env := testenv.New(t, 3)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	env.Tick(t0)
	for _, j := range jobs {
		def := codecs.JobDef{TZ: j.tz, MisfireGrace: "30m", Exclude: &codecs.ExcludeDef{Dates: j.dates}}
		for _, m := range j.members {
			sd := codecs.ScheduleDef{Cron: m.cron, TZ: m.tz}
			if m.every > 0 {
				sd.Every = m.every.String()
			}
			if m.overlap != "" {
				sd.DST = &codecs.DSTDef{Overlap: m.overlap}
			}
			def.Schedules = append(def.Schedules, sd)
		}
		for _, r := range j.ranges {
			def.Exclude.Ranges = append(def.Exclude.Ranges, codecs.RangeDef{From: r[0].Format(time.RFC3339), To: r[1].Format(time.RFC3339)})
		}
		env.Put(j.id, def, t0)
	}
	env.WaitApplied()
	var ticks []*kgo.Record
	for at := t0.Add(10 * time.Minute); !at.After(t1); at = at.Add(10 * time.Minute) {
		ticks = append(ticks, &kgo.Record{Topic: string(env.Layout.Clock()), Key: []byte(clock.TickKey),
			Value: codecs.EncodeInternal(codecs.Tick{Time: at}), Timestamp: at})
	}
	require.NoError(t, env.Client.ProduceSync(t.Context(), ticks...).FirstErr())
	dispatch.WaitLen(t, len(want), 5*time.Minute)
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)

	var got []fire
	ids := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		require.Zero(t, d.Missed, d.FireID)
		require.Equal(t, codecs.ScheduledFireID(d.JobID, d.ScheduledAt), d.FireID)
		ids[d.FireID]++
		got = append(got, fire{d.JobID, d.ScheduledAt.Unix()})
	}
	for id, n := range ids {
		require.Equal(t, 1, n, "fire_id %s dispatched %d times", id, n)
	}
	cmp := func(a, b fire) int {
		if a.job != b.job {
			if a.job < b.job {
				return -1
			}
			return 1
		}
		return int(a.at - b.at)
	}
	slices.SortFunc(want, cmp)
	slices.SortFunc(got, cmp)
	require.Equal(t, want, got)
}
