package scheduler

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCaughtUpWaitsForTheQueuedAdvances: a partition recovered on a new
// pod is caught up (its wait for the new owner no longer excused by the
// lateness gauge) only once its watermark reaches the latest time the
// instance knows announced, the clock table's included, not at the first
// of the advances queued for it while it moved. Adversary 19g in CI
// (Apache Kafka): a new pod's busy partition recovered before its idle
// one, completed the oldest queued advance while the pod had consumed no
// later one, counted as caught up, and read 6 s once the idle partition
// consumed the rest. Without a clock table (SetClockTable unset) only the
// consumed advances count, as before.
func TestCaughtUpWaitsForTheQueuedAdvances(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 23, 7, 0, 0, time.UTC)
	for _, withTable := range []bool{true, false} {
		h := newPartitionHarness(t, 100, t0)
		h.advance(t0) // the partition's watermark when it moved
		// The new owner: an empty store restored from the changelog, on
		// an instance that has consumed no advance yet; the clock table
		// it reads is 6 s ahead (the advances queued meanwhile).
		h.moveToEmptyStore()
		var table atomic.Int64
		if withTable {
			h.s.SetClockTable(func() time.Time { return time.Unix(0, table.Load()).UTC() })
		}
		table.Store(t0.Add(6 * time.Second).UnixNano())
		caught := func() bool {
			pt, ok := h.s.Partitions()[0]
			require.True(t, ok, "partition 0 owned and recovered")
			return pt.CaughtUp
		}
		h.advance(t0.Add(time.Second)) // the oldest queued advance
		require.Equal(t, !withTable, caught(), "clock table %v: caught up after the first queued advance, 5 s of them still queued", withTable)
		for i := 2; i <= 6; i++ {
			h.advance(t0.Add(time.Duration(i) * time.Second))
		}
		require.True(t, caught(), "clock table %v: caught up once the watermark reached the table", withTable)
	}
}
