package schedule

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSkipMatchesWalk checks Skip against a walk with Next over generated
// every schedules (with and without start/end bounds), spans and keeps.
func TestSkipMatchesWalk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 2))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(maxSec int64) time.Time {
		return base.Add(time.Duration(rng.Int64N(maxSec))*time.Second + time.Duration(rng.Int64N(3))*time.Duration(rng.Int64N(1e9)))
	}
	for i := range 3000 {
		spec := Spec{Every: time.Duration(1+rng.Int64N(90)) * time.Second / time.Duration(1+rng.Int64N(2)) * 2}
		if spec.Every < MinEvery {
			spec.Every = MinEvery
		}
		if rng.IntN(3) == 0 {
			spec.Start = at(2000)
		}
		if rng.IntN(3) == 0 {
			spec.End = spec.Start.Add(time.Duration(rng.Int64N(4000)) * time.Second)
			if spec.Start.IsZero() {
				spec.End = at(4000)
			}
		}
		s, err := Parse(spec)
		require.NoError(t, err)
		from := at(3000)
		before := from.Add(time.Duration(rng.Int64N(5000)) * time.Second)
		keep := rng.Int64N(5)
		var fires []time.Time
		for f := s.Next(from.Add(-1)); !f.IsZero() && f.Before(before); f = s.Next(f) {
			fires = append(fires, f)
		}
		wantSkipped := max(int64(len(fires))-keep, 0)
		var wantResume time.Time
		if wantSkipped < int64(len(fires)) {
			wantResume = fires[wantSkipped]
		} else if len(fires) > 0 {
			wantResume = s.Next(fires[len(fires)-1])
		} else {
			wantResume = s.Next(from.Add(-1))
		}
		skipped, resume, ok := Skip(s, from, before, keep)
		require.True(t, ok)
		require.Equal(t, wantSkipped, skipped, "case %d: %+v from %s before %s keep %d", i, spec, from, before, keep)
		require.True(t, wantResume.Equal(resume), "case %d: %+v from %s before %s keep %d: resume %s, want %s", i, spec, from, before, keep, resume, wantResume)
	}
}

func TestSkipRefusesCron(t *testing.T) {
	t.Parallel()
	s, err := Parse(Spec{Cron: "* * * * *"})
	require.NoError(t, err)
	_, _, ok := Skip(s, time.Unix(0, 0), time.Unix(3600, 0), 1)
	require.False(t, ok)
}

func BenchmarkSkipEveryMonth(b *testing.B) {
	s, err := Parse(Spec{Every: time.Second})
	require.NoError(b, err)
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		Skip(s, from, from.Add(30*24*time.Hour), 100)
	}
}
