package scheduler

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// TestJitterBoundaries: over generated jobs, jitters and instants, a put or
// resume at t (dueFrom) owes exactly the scheduled times after t, and an
// update that changes the jitter (rebase) owes exactly the scheduled times
// the old definition had not handled: the first due time of the new
// definition is the first scheduled time not sent, under its new jitter.
func TestJitterBoundaries(t *testing.T) {
	t.Parallel()
	c := schedule.NewCache(100)
	rng := rand.New(rand.NewPCG(14, 4))
	specs := []schedule.Spec{{Every: time.Minute}, {Every: 7 * time.Second}, {Cron: "*/5 * * * *", TZ: "Europe/Berlin"}, {Cron: "30 1 * * *", TZ: "America/New_York"}}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2000 {
		spec := specs[rng.IntN(len(specs))]
		inner, err := c.Get(spec)
		require.NoError(t, err)
		gap := inner.Next(inner.Next(base)).Sub(inner.Next(base))
		jit := func() time.Duration {
			if rng.IntN(4) == 0 {
				return 0
			}
			return time.Duration(1 + rng.Int64N(int64(min(gap, time.Hour))))
		}
		key := "j" + string(rune('a'+i%26))
		oldRec := &codecs.JobRecord{Job: codecs.Job{Spec: spec, Jitter: jit()}}
		newRec := &codecs.JobRecord{Job: codecs.Job{Spec: spec, Jitter: jit()}}
		at := base.Add(time.Duration(rng.Int64N(int64(400 * 24 * time.Hour))))

		// dueFrom: the first owed due time is the first scheduled time after at.
		from := dueFrom(c, key, newRec, at)
		ns, err := jobSchedule(c, key, newRec)
		require.NoError(t, err)
		first := inner.Next(at)
		require.Equal(t, first, codecs.Scheduled(ns, ns.Next(from)), "case %d: put at %s", i, at)
		require.Equal(t, first.Add(codecs.JitterOffset(codecs.ScheduledFireID(key, first), newRec.Job.Jitter)), ns.Next(from))

		// rebase: the old definition handled every due time up to h.
		os, err := jobSchedule(c, key, oldRec)
		require.NoError(t, err)
		h := at
		unsent := codecs.Scheduled(os, os.Next(h))
		got := rebase(c, key, oldRec, newRec, h)
		require.Equal(t, unsent, codecs.Scheduled(ns, ns.Next(got)), "case %d: jitter %s -> %s at %s", i, oldRec.Job.Jitter, newRec.Job.Jitter, h)
	}
}
