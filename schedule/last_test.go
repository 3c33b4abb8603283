package schedule

import (
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

	require.Equal(t, base.Add(10*time.Second), Last(sec, time.Time{}, base.Add(10*time.Second+time.Millisecond), 1000))
	require.Equal(t, base.Add(-15*time.Hour), Last(daily, time.Time{}, base.Add(2*time.Hour), 1000))
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Last(yearly, time.Time{}, base, 1000))
	require.True(t, Last(daily, base, base.Add(2*time.Hour), 1000).IsZero(), "nothing after `after`")
	require.Equal(t, base.Add(time.Hour), Last(at, time.Time{}, base.Add(48*time.Hour), 1000))

	require.Equal(t, []time.Time{base.Add(9 * time.Hour), base.Add(33 * time.Hour)}, NextN(daily, base, 2))
	require.Len(t, NextN(at, base, 5), 1)
}
