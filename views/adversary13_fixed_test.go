package views_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// TestAdversary13DurationSaturates: a fire's duration_seconds is wrong for
// a result whose started_at and finished_at are more than 292 years apart.
//
// Promise (docs/openapi.json, Fire.duration_seconds): "`finished_at` -
// `started_at`, when both are known"; docs/topics.md (Results): times "from
// 1970 to 9999", finished_at "not before `started_at`": the result below is
// valid and accepted by codecs.DecodeResult.
//
// Reproduction: a failed result with started_at 1970-01-01T00:00:00Z and
// finished_at 9999-12-31T00:00:00Z, folded into a history and read with
// views.FiresOf (what GET /v1/jobs/{id}/fires answers).
//
// Observed: duration_seconds 9223372036.85 (time.Duration's maximum, 292
// years) instead of about 2.5e11 s. Cause: views.seconds takes
// FinishedAt.Sub(StartedAt), which saturates; the same holds for
// delay_seconds. Low severity (an executor's clock gone wild).
func TestAdversary13DurationSaturates(t *testing.T) {
	raw := []byte(`{"v":1,"fire_id":"j@t1","scheduled_at":"2026-06-01T00:00:00Z","status":"failed",` +
		`"started_at":"1970-01-01T00:00:00Z","finished_at":"9999-12-31T00:00:00Z","error":"x"}`)
	r, err := codecs.DecodeResult([]byte("j"), raw)
	require.NoError(t, err, "the result is valid")
	rec, _, err := codecs.FoldFire(nil, r.ScheduledAt, r.Suffix, 50, func(f *codecs.FireEntry) {
		f.Attempt, f.Status, f.StartedAt, f.FinishedAt, f.Error = r.Attempt, r.Status, r.StartedAt, r.FinishedAt, r.Error
	})
	require.NoError(t, err)
	h, err := codecs.DecodeHistory(rec)
	require.NoError(t, err)
	fires := views.FiresOf("j", h)
	require.Len(t, fires, 1)
	require.NotNil(t, fires[0].DurationSeconds)
	want := float64(r.FinishedAt.Unix() - r.StartedAt.Unix())
	require.InDelta(t, want, *fires[0].DurationSeconds, 1, "duration_seconds %.2f, finished_at - started_at is %.0f s", *fires[0].DurationSeconds, want)
}
