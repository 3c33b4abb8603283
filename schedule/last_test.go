package schedule

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLastAndNextN(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	sec, err := Parse(Spec{Every: time.Second})
	require.NoError(t, err)
	daily, err := Parse(Spec{Cron: "0 9 * * *"})
	require.NoError(t, err)
	yearly, err := Parse(Spec{Cron: "@yearly"})
	require.NoError(t, err)
	at, err := Parse(Spec{At: base.Add(time.Hour)})
	require.NoError(t, err)

	require.Equal(t, base.Add(10*time.Second), Last(sec, time.Time{}, base.Add(10*time.Second+time.Millisecond)))
	require.Equal(t, base.Add(-15*time.Hour), Last(daily, time.Time{}, base.Add(2*time.Hour)))
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Last(yearly, time.Time{}, base))
	require.True(t, Last(daily, base, base.Add(2*time.Hour)).IsZero(), "nothing after `after`")
	require.Equal(t, base.Add(time.Hour), Last(at, time.Time{}, base.Add(48*time.Hour)))

	require.Equal(t, []time.Time{base.Add(9 * time.Hour), base.Add(33 * time.Hour)}, NextN(daily, base, 2))
	require.Len(t, NextN(at, base, 5), 1)
}

// TestLastMatchesWalk compares Last with a forward walk over generated
// cron (with zones that have DST) and every schedules and windows.
func TestLastMatchesWalk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 3))
	crons := []string{"* * * * *", "*/7 * * * *", "0 9 * * 1-5", "30 2 * * *", "0 0 29 2 *", "*/13 * * * * *", "0 0 1 1 *", "15 3 1,15 * *"}
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1500 {
		var spec Spec
		if rng.IntN(3) == 0 {
			spec.Every = time.Duration(1+rng.IntN(7200)) * time.Second
			if rng.IntN(2) == 0 {
				spec.Start = base.Add(time.Duration(rng.Int64N(int64(400 * 24 * time.Hour))))
			}
		} else {
			spec.Cron, spec.TZ = crons[rng.IntN(len(crons))], zones[rng.IntN(len(zones))]
		}
		if rng.IntN(4) == 0 {
			spec.End = base.Add(time.Duration(rng.Int64N(int64(800 * 24 * time.Hour))))
			if spec.End.Before(spec.Start) {
				spec.End = time.Time{}
			}
		}
		s, err := Parse(spec)
		require.NoError(t, err)
		after := base.Add(time.Duration(rng.Int64N(int64(400 * 24 * time.Hour))))
		upTo := after.Add(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
		if rng.IntN(2) == 0 {
			upTo = after.Add(time.Duration(rng.Int64N(int64(120 * time.Second))))
		}
		var want time.Time
		for at := s.Next(after); !at.IsZero() && !at.After(upTo); at = s.Next(at) {
			want = at
		}
		got := Last(s, after, upTo)
		require.True(t, want.Equal(got), "case %d: %+v (%s, %s]: got %s, want %s", i, spec, after, upTo, got, want)
	}
}

// BenchmarkLastOldCron: the last fire of "* * * 1 *" (every minute in
// January) seen in November, ten months back past 44,640 January fires.
func BenchmarkLastOldCron(b *testing.B) {
	s, err := Parse(Spec{Cron: "* * * 1 *", TZ: "Europe/Berlin"})
	require.NoError(b, err)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		if Last(s, now.AddDate(-1, 0, 0), now).IsZero() {
			b.Fatal("no last fire")
		}
	}
}
