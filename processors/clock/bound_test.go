package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/processors/clock"
)

func TestBound(t *testing.T) {
	t.Parallel()
	ref := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		tick     time.Time
		ref      time.Time
		maxAhead time.Duration
		want     time.Time
	}{
		{"behind the reference", ref.Add(-time.Minute), ref, time.Second, ref.Add(-time.Minute)},
		{"within the bound", ref.Add(time.Second), ref, time.Second, ref.Add(time.Second)},
		{"an hour ahead", ref.Add(time.Hour), ref, time.Second, ref.Add(time.Second)},
		{"no bound", ref.Add(time.Hour), ref, -1, ref.Add(time.Hour)},
		{"no reference", ref.Add(time.Hour), time.Time{}, time.Second, ref.Add(time.Hour)},
		{"reference at the epoch (no timestamp)", ref.Add(time.Hour), time.Unix(0, 0), time.Second, ref.Add(time.Hour)},
	} {
		require.Equal(t, tc.want, clock.Bound(tc.tick, tc.ref, tc.maxAhead), tc.name)
	}
}
