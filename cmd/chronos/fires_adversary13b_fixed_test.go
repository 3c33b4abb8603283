package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/views"
)

// TestAdversary13bFiresTableDurationOverflows: round 1 fixed
// duration_seconds saturating at 292 years in the API (views.secondsBetween
// counts Unix seconds); `chronos jobs fires` turns the seconds back into a
// time.Duration, which overflows: an 8,000-year run prints as a negative
// duration.
//
// Promise (docs/topics.md, Results): "Times are from 1970 to 9999";
// started_at "give it, and the history shows a duration"; round 1's fix:
// "duration_seconds and delay_seconds count seconds from Unix times:
// time.Duration saturated at 292 years".
//
// Reproduction: the API answers a fire with started_at 1970-01-01,
// finished_at 9999-12-31 (both accepted), duration_seconds 253402214400;
// the CLI prints the fires table (printFires).
//
// Observed: DURATION reads "-2562047h47m16.854775808s" (time.Duration of 2.5e20 ns,
// out of range: MinInt64 on amd64).
func TestAdversary13bFiresTableDurationOverflows(t *testing.T) {
	start := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	secs := float64(end.Unix() - start.Unix())
	f := views.Fire{FireID: "long@m-0-1", ScheduledAt: start, Status: "succeeded", Attempt: 1,
		StartedAt: &start, FinishedAt: &end, DurationSeconds: &secs}
	var out bytes.Buffer
	printFires(&out, []views.Fire{f})
	t.Logf("\n%s", out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	duration := strings.Fields(lines[1])[6]
	require.False(t, strings.HasPrefix(duration, "-"), "a run of %.0f s (8,000 years) prints as duration %s: %q", secs, duration, lines[1])
}
