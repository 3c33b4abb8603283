package topology_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/topology"
)

func TestNames(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "staging."} {
		n := topology.Names{Prefix: prefix}
		for got, want := range map[string]string{
			string(n.Jobs()):              "chronos-jobs",
			string(n.BucketTriggers()):    "chronos-bucket-triggers",
			string(n.Dispatch()):          "chronos-dispatch",
			string(n.Rejects()):           "chronos-rejects",
			string(n.Clock()):             "chronos-clock",
			string(n.ShardTriggers()):     "chronos-shard-triggers",
			string(n.SchedulerTable()):    "chronos-scheduler-table",
			string(n.SchedulerLoop()):     "chronos-scheduler-loop",
			string(n.SchedulerBackfill()): "chronos-scheduler-backfill",
			string(n.ClockTable()):        "chronos-clock-table",
		} {
			require.Equal(t, prefix+want, got)
		}
		require.Equal(t, prefix+"chronos-scheduler", string(n.SchedulerGroup()))
		require.Equal(t, prefix+"chronos-clock", string(n.ClockGroup()))
		require.Equal(t, prefix+"chronos-router", string(n.RouterGroup()))
	}
}

func TestValidatePrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "staging.", "a-b_c.D9", strings.Repeat("x", 100)} {
		require.NoError(t, topology.ValidatePrefix(p), "%q", p)
	}
	for _, p := range []string{"a b", "ä", strings.Repeat("x", 101), "a/b", "a:b", "tab\t", "\x00"} {
		require.Error(t, topology.ValidatePrefix(p), "%q", p)
	}
}
