package processors_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestDayOfFiresMatchesOracle registers a few thousand jobs with mixed
// schedules and zones, drives the simulated clock across a day that
// contains the America/New_York spring-forward transition, and compares
// the exact multiset of fire_ids with an independent brute-force oracle.
func TestDayOfFiresMatchesOracle(t *testing.T) {
	t.Parallel()
	const partitions = 6
	t0 := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(24 * time.Hour)
	n := 2000
	if testing.Short() {
		n = 500 // the race detector makes pebble and goka ~10x slower
	}
	jobs := dayJobs(t0, n)

	want := map[string]int{}
	for _, j := range jobs {
		for _, at := range oracleFires(t, j.def, t0, t1) {
			want[codecs.ScheduledFireID(j.id, at)]++
		}
	}
	t.Logf("%d jobs, %d expected fires", len(jobs), len(want))

	env := testenv.New(t, partitions)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	// Small chunks and no time budget: fan-outs continue through the
	// loopback, so continuations are part of what the oracle checks.
	cfg.Fanout.ChunkSize, cfg.Fanout.Budget = 64, time.Nanosecond
	env.Start(cfg)
	env.Tick(t0)
	keys, values := make([]string, len(jobs)), make([][]byte, len(jobs))
	for i, j := range jobs {
		keys[i], values[i] = j.id, testenv.PutCommand(j.id, j.def)
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()

	var ticks []*kgo.Record
	// Five-minute steps: every job has a 10m misfire grace, so each fire
	// is late by at most one step and still on time.
	for at := t0.Add(5 * time.Minute); !at.After(t1); at = at.Add(5 * time.Minute) {
		ticks = append(ticks, &kgo.Record{Topic: string(env.Layout.Clock()), Key: []byte(clock.TickKey),
			Value: codecs.EncodeInternal(codecs.Tick{Time: at}), Timestamp: at})
	}
	require.NoError(t, env.Client.ProduceSync(t.Context(), ticks...).FirstErr())
	dispatch.WaitLen(t, len(want), 10*time.Minute)
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)

	got := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		got[d.FireID]++
		require.Zero(t, d.Missed, d.FireID)
		require.Equal(t, codecs.ScheduledFireID(d.JobID, d.ScheduledAt), d.FireID)
	}
	require.Equal(t, len(want), len(got), "distinct fire ids")
	for id, n := range got {
		require.Equal(t, want[id], n, "fire %s", id)
	}
}

type dayJob struct {
	id  string
	def codecs.JobDef
}

// dayJobs returns n jobs cycling through schedule templates and zones.
func dayJobs(t0 time.Time, n int) []dayJob {
	zones := []string{"", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "America/New_York"}
	crons := []string{"0 * * * *", "*/15 * * * *", "30 2 * * *", "0 2 * * *", "45 1 * * *", "0 9 * * 1-5",
		"@daily", "@hourly", "15 */3 * * *", "0 0 * * 0", "*/5 2 * * *", "0 30 */2 * * *", "59 23 * * *", "0 3 7,8 3 *"}
	everys := []string{"7m", "1h", "17m", "13m", "25m"}
	var out []dayJob
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("job-%04d", i)
		d := codecs.JobDef{MisfireGrace: "10m"}
		switch i % 10 {
		case 0, 1:
			d.Every = everys[(i/10)%len(everys)]
			d.Start = t0.Add(time.Duration(i%97) * time.Second).Format(time.RFC3339)
		case 2:
			d.At = t0.Add(time.Duration(i*37%(26*3600)-3600) * time.Second).Format(time.RFC3339)
		default:
			d.Cron = crons[i%len(crons)]
			d.TZ = zones[i%len(zones)]
		}
		if i%250 == 7 {
			d.Cron, d.Every, d.Start, d.At, d.TZ = "*/30 * * * * *", "", "", "", "Europe/Berlin"
		}
		out = append(out, dayJob{id: id, def: d})
	}
	return out
}

// oracleFires computes a job's fire instants in (from, to] by brute force,
// independently of schedule.Next: every local wall-clock second (or minute)
// is matched against the cron fields; a wall time that occurs twice fires at
// its first occurrence, one skipped by a DST gap fires when the gap ends.
func oracleFires(t *testing.T, d codecs.JobDef, from, to time.Time) []time.Time {
	t.Helper()
	switch {
	case d.At != "":
		at, err := time.Parse(time.RFC3339, d.At)
		require.NoError(t, err)
		if at.After(from) && !at.After(to) {
			return []time.Time{at}
		}
		return nil
	case d.Every != "":
		every, err := time.ParseDuration(d.Every)
		require.NoError(t, err)
		start, err := time.Parse(time.RFC3339, d.Start)
		require.NoError(t, err)
		var out []time.Time
		for at := start; !at.After(to); at = at.Add(every) {
			if at.After(from) {
				out = append(out, at)
			}
		}
		return out
	}
	loc, err := time.LoadLocation(d.TZ)
	require.NoError(t, err)
	spec, err := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor).Parse(d.Cron)
	require.NoError(t, err)
	s := spec.(*cron.SpecSchedule)
	step := time.Minute
	if s.Second != 1<<0 {
		step = time.Second
	}
	seen := map[time.Time]bool{}
	var out []time.Time
	// Walk naive wall-clock times (a UTC clock face) covering the window.
	for w := from.Add(-26 * time.Hour).Truncate(step); w.Before(to.Add(26 * time.Hour)); w = w.Add(step) {
		if !wallMatches(s, w) {
			continue
		}
		at := resolveWall(w, loc)
		if at.After(from) && !at.After(to) && !seen[at] {
			seen[at] = true
			out = append(out, at)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// wallMatches matches a naive wall time (fields read in UTC) against the
// cron bit masks, with cron's day rule: if either day field is *, both must
// match, otherwise either.
func wallMatches(s *cron.SpecSchedule, w time.Time) bool {
	const star = 1 << 63
	bit := func(mask uint64, v int) bool { return mask&(1<<uint(v)) != 0 }
	if !bit(s.Second, w.Second()) || !bit(s.Minute, w.Minute()) || !bit(s.Hour, w.Hour()) || !bit(s.Month, int(w.Month())) {
		return false
	}
	dom, dow := bit(s.Dom, w.Day()), bit(s.Dow, int(w.Weekday()))
	if s.Dom&star != 0 || s.Dow&star != 0 {
		return dom && dow
	}
	return dom || dow
}

// resolveWall returns the first instant whose local wall time in loc is the
// naive wall time w, or, if w was skipped by a gap, the instant the gap ends.
func resolveWall(w time.Time, loc *time.Location) time.Time {
	naive := func(at time.Time) time.Time {
		l := at.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
	}
	var best time.Time
	for off := -14 * time.Hour; off <= 14*time.Hour; off += 15 * time.Minute {
		at := w.Add(-off)
		if naive(at).Equal(w) && (best.IsZero() || at.Before(best)) {
			best = at
		}
	}
	if !best.IsZero() {
		return best
	}
	// Skipped: the gap ends at the first instant whose wall time is past w.
	lo, hi := w.Add(-14*time.Hour), w.Add(14*time.Hour)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if naive(mid).After(w) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
