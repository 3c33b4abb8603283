package scheduler

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// TestFireLimitCounts: over generated jobs (every, cron, at, with and
// without jitter and end), limits and counts already used, allot gives the
// job exactly min(max_fires - used, times left) scheduled times after it
// starts, its schedule ends after the last of them, and once it has handled
// k of them limitUsed counts used + k and RemainingFires the rest.
func TestFireLimitCounts(t *testing.T) {
	t.Parallel()
	c := schedule.NewCache(100)
	rng := rand.New(rand.NewPCG(14, 5))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		var spec schedule.Spec
		switch rng.IntN(4) {
		case 0:
			spec = schedule.Spec{Every: time.Duration(1+rng.IntN(600)) * time.Second}
		case 1:
			spec = schedule.Spec{Cron: "*/15 * * * *", TZ: "Asia/Kolkata"}
		case 2:
			spec = schedule.Spec{At: base.Add(time.Duration(rng.IntN(3600)) * time.Second)}
		default:
			spec = schedule.Spec{Every: time.Minute, End: base.Add(time.Duration(rng.IntN(60)) * time.Minute)}
		}
		inner, err := c.Get(spec)
		require.NoError(t, err)
		rec := &codecs.JobRecord{Status: codecs.StatusActive, Job: codecs.Job{Spec: spec, MaxFires: 1 + rng.IntN(20)}}
		if spec.At.IsZero() && rng.IntN(2) == 0 {
			rec.Job.Jitter = time.Duration(1 + rng.Int64N(int64(time.Second)))
		}
		rec.Used = uint64(rng.IntN(rec.Job.MaxFires + 2))
		from := base.Add(-time.Duration(rng.IntN(600)) * time.Second)
		key := "k" + string(rune('a'+i%26))
		// The times the job may fire, counted without the limit.
		free, err := jobSchedule(c, key, rec)
		require.NoError(t, err)
		var times []time.Time
		for d := free.Next(from); !d.IsZero() && len(times) < 40; d = free.Next(d) {
			times = append(times, d)
		}
		done := allot(c, key, rec, from)
		left := max(rec.Job.MaxFires-int(rec.Used), 0)
		want := min(left, len(times))
		require.Equal(t, want == 0, done, "case %d", i)
		if done {
			continue
		}
		require.EqualValues(t, want, rec.Quota, "case %d", i)
		s, err := jobSchedule(c, key, rec)
		require.NoError(t, err)
		var got []time.Time
		for d := s.Next(from); !d.IsZero(); d = s.Next(d) {
			got = append(got, d)
		}
		require.Equal(t, times[:want], got, "case %d: %+v", i, spec)
		for k := 0; k <= want; k++ {
			h := from
			if k > 0 {
				h = got[k-1]
			}
			require.Equal(t, rec.Used+uint64(k), limitUsed(c, key, rec, h), "case %d after %d", i, k)
			n, ok := rec.RemainingFires(key, inner, h)
			require.True(t, ok)
			require.EqualValues(t, want-k, n)
		}
	}
}
