package codecs_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// TestJitterOffsetRange: offsets lie in [0, j), are a function of the
// fire_id alone, and spread over the range (each tenth of it gets some of
// 10,000 fire_ids).
func TestJitterOffsetRange(t *testing.T) {
	t.Parallel()
	require.Zero(t, codecs.JitterOffset("j@2026-01-01T00:00:00Z", 0))
	require.Zero(t, codecs.JitterOffset("j@2026-01-01T00:00:00Z", -time.Second))
	require.Zero(t, codecs.JitterOffset("j@2026-01-01T00:00:00Z", time.Nanosecond))
	for _, j := range []time.Duration{2, time.Millisecond, 30 * time.Second, time.Hour} {
		var tenths [10]int
		for i := range 10_000 {
			id := codecs.ScheduledFireID("job-"+string(rune('a'+i%26)), time.Unix(int64(i), 0))
			off := codecs.JitterOffset(id, j)
			require.GreaterOrEqual(t, off, time.Duration(0))
			require.Less(t, off, j)
			require.Equal(t, off, codecs.JitterOffset(id, j))
			tenths[int(int64(off)*10/int64(j))]++
		}
		if j >= 10 {
			for k, n := range tenths {
				require.Greater(t, n, 700, "jitter %s: tenth %d has %d of 10000", j, k, n)
			}
		}
	}
}

// bruteDue is the oracle of a DueSchedule: every scheduled time of s in
// [from-j, to], each with its due time, sorted by due time.
type dueFire struct{ due, sched time.Time }

func bruteDue(s schedule.Schedule, key string, j time.Duration, limitEnd, from, to time.Time) []dueFire {
	var out []dueFire
	for n := s.Next(from.Add(-j - 1)); !n.IsZero() && !n.After(to); n = s.Next(n) {
		if !limitEnd.IsZero() && n.After(limitEnd) {
			break
		}
		out = append(out, dueFire{n.Add(codecs.JitterOffset(codecs.ScheduledFireID(key, n), j)), n})
	}
	slices.SortFunc(out, func(a, b dueFire) int { return a.due.Compare(b.due) })
	return out
}

// TestDueScheduleOracle: over generated schedules (every and cron, several
// zones, DST policies), jitters up to the schedule's gap and fire limits,
// walking Next from a random start visits exactly the brute-force due
// times in order, each due time maps back to its scheduled time, and due
// times keep the order of scheduled times.
func TestDueScheduleOracle(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 3))
	crons := []string{"*/5 * * * *", "0 * * * *", "30 1 * * *", "*/20 * * * * *", "0 9 * * 1-5", "0 0 L * *", "15 2,3 * * *"}
	zones := []string{"", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 300 {
		var spec schedule.Spec
		if rng.IntN(2) == 0 {
			spec.Every = time.Duration(1+rng.IntN(7200)) * time.Second
		} else {
			spec = schedule.Spec{Cron: crons[rng.IntN(len(crons))], TZ: zones[rng.IntN(len(zones))]}
			if rng.IntN(3) == 0 {
				spec.DST = schedule.DST{Gap: schedule.GapSkip, Overlap: schedule.OverlapBoth}
			}
		}
		s, err := schedule.Parse(spec)
		require.NoError(t, err)
		from := base.Add(time.Duration(rng.Int64N(int64(300 * 24 * time.Hour))))
		// The schedule's shortest gap near from bounds the jitter.
		gap := time.Hour
		for n, k := s.Next(from.Add(-48*time.Hour)), 0; k < 400 && !n.IsZero(); k++ {
			m := s.Next(n)
			if m.IsZero() {
				break
			}
			gap = min(gap, m.Sub(n))
			n = m
		}
		j := time.Duration(1 + rng.Int64N(int64(gap)))
		key := "job" + string(rune('a'+i%26))
		rec := &codecs.JobRecord{Job: codecs.Job{Spec: spec, Jitter: j}}
		if rng.IntN(3) == 0 {
			rec.LimitEnd = s.Next(from.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))))
		}
		ds := codecs.JobSchedule(key, rec, s)
		to := from.Add(10 * 24 * time.Hour)
		want := bruteDue(s, key, j, rec.LimitEnd, from, to)
		var got []dueFire
		for d := ds.Next(from); !d.IsZero() && !d.After(to); d = ds.Next(d) {
			got = append(got, dueFire{d, codecs.Scheduled(ds, d)})
			if len(got) > len(want)+1 {
				break
			}
		}
		var wantAfter []dueFire
		for _, f := range want {
			if f.due.After(from) && !f.due.After(to) {
				wantAfter = append(wantAfter, f)
			}
		}
		require.Equal(t, wantAfter, got, "case %d: %+v jitter %s key %s from %s", i, spec, j, key, from)
		for k := 1; k < len(got); k++ {
			require.True(t, got[k].sched.After(got[k-1].sched), "case %d: due order differs from scheduled order", i)
		}
	}
}

// TestJobScheduleWithoutJitter: no jitter and no limit is the schedule itself.
func TestJobScheduleWithoutJitter(t *testing.T) {
	t.Parallel()
	s, err := schedule.Parse(schedule.Spec{Every: time.Minute})
	require.NoError(t, err)
	rec := &codecs.JobRecord{Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}}}
	require.Equal(t, s, codecs.JobSchedule("j", rec, s))
	at := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	require.Equal(t, at, codecs.Scheduled(s, at))
}

// TestJitterValidation: jitter is bounded by an hour and by the schedule's
// gap; bad values are clear *Error on field "jitter"; zero is no jitter.
func TestJitterValidation(t *testing.T) {
	t.Parallel()
	lim := codecs.DefaultLimits()
	for _, c := range []struct {
		def  codecs.JobDef
		want time.Duration
		err  string
	}{
		{codecs.JobDef{Every: "1m", Jitter: "30s"}, 30 * time.Second, ""},
		{codecs.JobDef{Every: "1m", Jitter: "1m"}, time.Minute, ""},
		{codecs.JobDef{Every: "1m", Jitter: "0s"}, 0, ""},
		{codecs.JobDef{Every: "1m", Jitter: "61s"}, 0, "longer than the period"},
		{codecs.JobDef{Every: "3h", Jitter: "61m"}, 0, "from 0s to 1h0m0s"},
		{codecs.JobDef{Every: "1m", Jitter: "-1s"}, 0, "from 0s to"},
		{codecs.JobDef{Every: "1m", Jitter: "soon"}, 0, "from 0s to"},
		{codecs.JobDef{At: "2030-01-01T00:00:00Z", Jitter: "1h"}, time.Hour, ""},
		{codecs.JobDef{Cron: "*/5 * * * *", Jitter: "5m"}, 5 * time.Minute, ""},
		{codecs.JobDef{Cron: "*/5 * * * *", Jitter: "5m1s"}, 0, "gap of 5m0s"},
		{codecs.JobDef{Cron: "0 9,10 * * *", Jitter: "61m"}, 0, "from 0s to"},
		{codecs.JobDef{Cron: "0 9,10 * * *", Jitter: "59m"}, 59 * time.Minute, ""},
		{codecs.JobDef{Cron: "0 9,9 * * *", Jitter: "1h"}, time.Hour, ""},
	} {
		j, err := c.def.Validate(lim)
		if c.err == "" {
			require.NoError(t, err, "%+v", c.def)
			require.Equal(t, c.want, j.Jitter, "%+v", c.def)
			// Def writes it back so that it validates the same.
			j2, err := j.Def().Validate(lim)
			require.NoError(t, err)
			require.Equal(t, j.Jitter, j2.Jitter)
			continue
		}
		var e *codecs.Error
		require.True(t, errors.As(err, &e), "%+v: %v", c.def, err)
		require.Equal(t, "jitter", e.Field)
		require.Contains(t, e.Reason, c.err)
	}
}

// TestDispatchDueAt: due_at is written only when set, and reads back.
func TestDispatchDueAt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := codecs.Dispatch{FireID: codecs.ScheduledFireID("j", at), JobID: "j", Trigger: codecs.TriggerSchedule, ScheduledAt: at, FiredAt: at.Add(time.Second)}
	b := codecs.AppendDispatch(nil, &d)
	require.NotContains(t, string(b), "due_at")
	d.DueAt = at.Add(1234567 * time.Microsecond)
	b = codecs.AppendDispatch(nil, &d)
	require.Contains(t, string(b), `"due_at":"2026-01-01T00:00:01.234567Z"`)
	got, err := codecs.DecodeDispatch(b)
	require.NoError(t, err)
	require.Equal(t, d.DueAt, got.DueAt)
	require.Equal(t, d.ScheduledAt, got.ScheduledAt)
}
