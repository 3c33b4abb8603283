package scheduler

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestChangelogWaitIsTimed: a bucket chunk waits for its start and its end
// to reach the changelog (Config.Durable); each wait is one observation of
// chronos_changelog_wait_seconds.
func TestChangelogWaitIsTimed(t *testing.T) {
	t.Parallel()
	l := newBucketLog(t, 100, false, "j0", "j1")
	reg := prometheus.NewRegistry()
	l.s.cfg.Metrics = NewMetrics(reg)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), bucketAt, l.nextOff(), bucketT46, false)
	require.Len(t, l.fired(), 2)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "chronos_changelog_wait_seconds" {
			n = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	require.Equal(t, uint64(2), n, "the chunk's start and end")
}
