package views_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// TestFiresOfNoNegativeDuration: an attempt reported finished alone, then
// started later (results of one attempt that disagree), shows no duration
// rather than a negative one.
func TestFiresOfNoNegativeDuration(t *testing.T) {
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	h := codecs.History{Fires: []codecs.FireEntry{
		{Suffix: "a", ScheduledAt: at, Attempt: 1, Status: codecs.StatusSucceeded, StartedAt: at.Add(5 * time.Second), FinishedAt: at.Add(2 * time.Second)},
		{Suffix: "b", ScheduledAt: at.Add(time.Minute), Attempt: 1, Status: codecs.StatusSucceeded, StartedAt: at.Add(61 * time.Second), FinishedAt: at.Add(63 * time.Second)},
	}}
	fires := views.FiresOf("j", h)
	require.Len(t, fires, 2)
	require.Equal(t, "j@b", fires[0].FireID)
	require.NotNil(t, fires[0].DurationSeconds)
	require.InDelta(t, 2.0, *fires[0].DurationSeconds, 1e-9)
	require.Equal(t, "j@a", fires[1].FireID)
	require.Nil(t, fires[1].DurationSeconds, "finish before start: no duration")
}
