package codecs_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdversary49HeldHistoryEntryBounds: a fire and a change at their
// largest (256-byte suffix, bucket and error, times that need the long
// encoding, the largest counters; a 128-byte actor, a 256-byte detail)
// stay within codecs.HistoryFireBytes and HistoryChangeBytes, the bounds
// instance.Config.Validate adds up against --batch-bytes.
func TestAdversary49HeldHistoryEntryBounds(t *testing.T) {
	far := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	s := func(n int) string { return strings.Repeat("\U0010FFFF", n/4) }
	f := codecs.FireEntry{Suffix: s(codecs.MaxIDLen), ScheduledAt: far, Dispatched: true, FiredAt: far, Trigger: codecs.TriggerBucket,
		Missed: math.MinInt64, Bucket: s(codecs.MaxBucketLen), Attempt: codecs.MaxAttempt, Status: codecs.StatusFailed,
		StartedAt: far, FinishedAt: far, Error: s(codecs.HistoryErrorBytes)}
	c := codecs.Change{Offset: math.MinInt64, At: far, Actor: s(codecs.HistoryActorBytes), Op: codecs.OpBackfill, Detail: s(codecs.HistoryDetailBytes)}
	empty := len(codecs.AppendHistory(nil, &codecs.History{CommandOffset: math.MinInt64}))
	one := len(codecs.AppendHistory(nil, &codecs.History{CommandOffset: math.MinInt64, Fires: []codecs.FireEntry{f}}))
	ch := len(codecs.AppendHistory(nil, &codecs.History{CommandOffset: math.MinInt64, Changes: []codecs.Change{c}}))
	t.Logf("empty %d, a largest fire %d, a largest change %d bytes", empty, one-empty, ch-empty)
	require.LessOrEqual(t, one-empty+1, codecs.HistoryFireBytes)
	require.LessOrEqual(t, ch-empty+1, codecs.HistoryChangeBytes)
}
