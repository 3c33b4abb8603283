package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// TestPrintJobDST: jobs get shows a job's DST policy with its defaults
// spelled out, and nothing for a job without one.
func TestPrintJobDST(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printJob(&b, &views.Job{ID: "j", Job: codecs.JobDef{Cron: "30 1 * * 5L", TZ: "America/New_York", DST: &codecs.DSTDef{Overlap: "both"}}})
	require.Regexp(t, `(?m)^dst:\s+gap shift, overlap both$`, b.String())
	require.Regexp(t, `(?m)^cron:\s+30 1 \* \* 5L$`, b.String())
	b.Reset()
	printJob(&b, &views.Job{ID: "j", Job: codecs.JobDef{Cron: "0 0 L * *"}})
	require.NotContains(t, b.String(), "dst")
}

func TestPrintJobSchedules(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printJob(&b, &views.Job{ID: "j", Job: codecs.JobDef{TZ: "Europe/Berlin", Schedules: []codecs.ScheduleDef{
		{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin", DST: &codecs.DSTDef{Gap: "skip"}}, {Every: "6h0m0s", TZ: "UTC"}},
		Exclude: &codecs.ExcludeDef{Dates: []string{"2026-12-25", "2026-12-26"}, Ranges: []codecs.RangeDef{{From: "2026-08-01T00:00:00Z", To: "2026-08-15T00:00:00Z"}}}}})
	require.Regexp(t, `(?m)^schedule 1:\s+cron 0 9 \* \* 1-5 tz Europe/Berlin dst gap skip, overlap first$`, b.String())
	require.Regexp(t, `(?m)^schedule 2:\s+every 6h0m0s tz UTC$`, b.String())
	require.Regexp(t, `(?m)^exclude dates:\s+2026-12-25, 2026-12-26$`, b.String())
	require.Regexp(t, `(?m)^exclude range:\s+2026-08-01T00:00:00Z to 2026-08-15T00:00:00Z$`, b.String())
}
