package processors_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestJitterFires drives the simulated clock in 10-second steps over jobs
// with a jitter (every and cron) and one without, and after each step
// requires exactly the fires whose due time (scheduled time plus
// codecs.JitterOffset of the fire_id, computed here from the schedule
// alone) is at or before the clock: none early, none missing, each
// fire_id once, scheduled_at nominal, due_at the jittered time. Halfway,
// one job's jitter changes (an update): every scheduled time still goes
// out exactly once, those the old definition had not sent at the new due
// times.
func TestJitterFires(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(5 * time.Minute)
	tu := t0.Add(3*time.Minute + 2*time.Second) // the update's time
	type job struct {
		id       string
		def      codecs.JobDef
		jitter   time.Duration
		newJ     time.Duration // after the update at tu (jitter-change only)
		update   bool
		schedule schedule.Schedule
	}
	jobs := []*job{
		{id: "jit-every", def: codecs.JobDef{Every: "1m", Jitter: "45s", Payload: []byte(`1`)}, jitter: 45 * time.Second},
		{id: "jit-cron", def: codecs.JobDef{Cron: "*/2 * * * *", Jitter: "2m"}, jitter: 2 * time.Minute},
		{id: "jit-change", def: codecs.JobDef{Every: "30s", Jitter: "29s", Payload: []byte(`1`)}, jitter: 29 * time.Second, newJ: 7 * time.Second, update: true},
		{id: "plain", def: codecs.JobDef{Every: "1m"}},
	}
	env := testenv.New(t, 3)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	env.Tick(t0)
	for _, j := range jobs {
		spec, err := j.def.Validate(codecs.DefaultLimits())
		require.NoError(t, err)
		j.schedule, err = schedule.Parse(spec.Spec)
		require.NoError(t, err)
		env.Put(j.id, j.def, t0)
	}
	env.WaitApplied()
	// due is the oracle: each scheduled time's due time; sent remembers
	// what went out before the update (under the old jitter).
	sentBefore := map[string]bool{}
	due := func(j *job, n time.Time, afterUpdate bool) time.Time {
		jit := j.jitter
		if j.update && afterUpdate && !sentBefore[codecs.ScheduledFireID(j.id, n)] {
			jit = j.newJ
		}
		return n.Add(codecs.JitterOffset(codecs.ScheduledFireID(j.id, n), jit))
	}
	adm := kadm.NewClient(env.Client)
	produced := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, string(env.Layout.Dispatch()))
		require.NoError(t, err)
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	updated := false
	for T := t0.Add(10 * time.Second); !T.After(t1); T = T.Add(10 * time.Second) {
		if !updated && !T.Before(tu) {
			for _, j := range jobs {
				if j.update {
					def := j.def
					def.Jitter, def.Payload = j.newJ.String(), []byte(`2`)
					env.Put(j.id, def, tu)
				}
			}
			env.WaitApplied()
			updated = true
		}
		env.Tick(T)
		env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
		n := produced()
		dispatch.WaitLen(t, int(n), time.Minute)
		var want []string
		for _, j := range jobs {
			for s := j.schedule.Next(t0); !s.After(T.Add(2 * time.Minute)); s = j.schedule.Next(s) {
				if !due(j, s, updated).After(T) {
					want = append(want, codecs.ScheduledFireID(j.id, s))
				}
			}
		}
		var got []string
		seen := map[string]bool{}
		for _, d := range dispatch.Dispatches(t) {
			require.False(t, seen[d.FireID], "fire_id %s twice", d.FireID)
			seen[d.FireID] = true
			got = append(got, d.FireID)
			require.Equal(t, codecs.ScheduledFireID(d.JobID, d.ScheduledAt), d.FireID)
			var j *job
			for _, c := range jobs {
				if c.id == d.JobID {
					j = c
				}
			}
			if j.jitter == 0 {
				require.True(t, d.DueAt.IsZero(), "%s: due_at without a jitter", d.FireID)
				continue
			}
			want := due(j, d.ScheduledAt, updated && string(d.Payload) == "2")
			require.Equal(t, want, d.DueAt, "%s: due_at", d.FireID)
			require.False(t, d.DueAt.Before(d.ScheduledAt))
		}
		sort.Strings(want)
		sort.Strings(got)
		require.Equal(t, want, got, "fires after the clock reached %s", T)
		if !updated {
			for _, id := range got {
				sentBefore[id] = true
			}
		}
	}
	// The jitter spread the fires: some went out at a due time other than
	// their scheduled one, by more than a step.
	spread := 0
	for _, d := range dispatch.Dispatches(t) {
		if d.DueAt.Sub(d.ScheduledAt) > 5*time.Second {
			spread++
		}
	}
	require.Greater(t, spread, 3, "jitter delayed fires")
	t.Log(fmt.Sprintf("%d fires checked", dispatch.Len()))
}
