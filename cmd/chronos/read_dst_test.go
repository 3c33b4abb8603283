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
