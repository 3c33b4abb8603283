package scheduler

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/lag"
)

// TestAdv22CaughtUpDependsOnScrapeTiming (adversary 22, fixed): the same partition history read
// at the same moment gives a different lateness depending on whether a
// scrape happened to run while the partition's watermark equalled the
// announced time. A partition recovers on a new pod, completes the advance
// announced after its recovery (caught up per docs/operations.md: "its
// watermark has reached the latest time the instance knows announced ...
// and that time was announced after the recovery"), then its fan-out gets
// stuck while the clock (table and the pod's other partitions) move on 8 s.
// 9 s after the recovery the gauge should read the stuck backlog in full
// (8 s, over the 5 s threshold). It does only if a scrape ran in the
// window in which watermark == known; otherwise CaughtUp never latched
// (Partitions evaluates it lazily), and restore+20 s is excused: 0.
func TestAdv22CaughtUpDependsOnScrapeTiming(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 23, 40, 0, 0, time.UTC)
	for _, scrapeInBetween := range []bool{true, false} {
		h := newPartitionHarness(t, 100, t0)
		h.advance(t0)
		h.moveToEmptyStore() // new owner, recovered now; knows no announced time yet
		var table atomic.Int64
		h.s.SetClockTable(func() time.Time { return time.Unix(0, table.Load()).UTC() })
		table.Store(t0.UnixNano())

		// The first advance after the recovery: announced and completed.
		table.Store(t0.Add(time.Second).UnixNano())
		h.advance(t0.Add(time.Second))
		require.Equal(t, t0.Add(time.Second), h.shard().Watermark)

		var announced atomic.Int64 // what the pod's other partitions consumed
		announced.Store(t0.Add(time.Second).UnixNano())
		var recoveredAt time.Time
		if v, ok := h.s.started.Load(int32(0)); ok {
			recoveredAt = v.(PartitionTimes).RecoveredAt
		}
		now := recoveredAt.Add(time.Second)
		g := &lag.Lateness{
			Partitions: func() map[int32]lag.PartitionTimes {
				out := map[int32]lag.PartitionTimes{}
				for p, pt := range h.s.Partitions() {
					out[p] = lag.PartitionTimes{Watermark: pt.Watermark, RecoveredAt: pt.RecoveredAt, Restore: pt.Restore, Pending: pt.Pending, CaughtUp: pt.CaughtUp}
				}
				return out
			},
			Announced: func() time.Time { return time.Unix(0, announced.Load()).UTC() },
			Now:       func() time.Time { return now },
		}
		if scrapeInBetween {
			t.Logf("scrape at recovery+1s: %.1f s", testutil.ToFloat64(g))
		}
		// The partition's fan-out is stuck from now on (no more advances
		// complete); the clock announces on for 8 s and the pod's other
		// partitions consume those advances.
		table.Store(t0.Add(9 * time.Second).UnixNano())
		announced.Store(t0.Add(9 * time.Second).UnixNano())
		h.s.announced.note(t0.Add(9 * time.Second)) // the pod's other partitions consumed them
		now = recoveredAt.Add(9 * time.Second)
		v := testutil.ToFloat64(g)
		t.Logf("scrape in between %v: reading at recovery+9s: %.1f s (threshold %.0f)", scrapeInBetween, v, lag.LatenessThreshold(time.Second))
		require.Equal(t, 8.0, v, "scrape in between %v: a caught-up partition stuck 8 s reads 8 s", scrapeInBetween)
	}
}
