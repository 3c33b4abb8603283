package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
)

// TestAdv25bRestoreCutsCost measures (does not fail on) what 9e709ba's
// restoreCuts costs: it now runs on the first callback of EVERY pass a
// store inherits with a recorded cursor (any rebalance or restart in the
// middle of an advance), not only when the pass cut jobs short, and reads
// every due entry behind the cursor, a record group at a time. n ordinary
// jobs (every 1m, put at 10:00, W = 10:00) are due at 10:01; the shard
// record says a pass to 11:00 is under way with its cursor at 10:30. The
// "owing" variant gives every job a late put (Through, OwedAt = W), so
// that every entry also moves (9e709ba's new rule).
//
// It runs 5,000 jobs and checks where restoreCuts leaves one of each kind;
// set n to 100,000 for the figures below:
//
//	go test -count=1 -run TestAdv25bRestoreCutsCost -v ./processors/scheduler/
//
// Measured on 9e709ba (2 shared cores, another job running): 570 ms for
// 100,000 entries behind the cursor that stay (5.7 µs each), 1.86 s when
// all of them move (since round 27 the ordinary ones move too, past T).
// Before 9e709ba the scan ran only with more than
// codecs.MaxPassCuts cut jobs (PassCutsLost); with 64 or fewer it read
// only the cut keys, and with none it read nothing.
func TestAdv25bRestoreCutsCost(t *testing.T) {
	for _, owing := range []bool{false, true} {
		t.Run(fmt.Sprintf("owing=%v", owing), func(t *testing.T) {
			n := 5_000 // 100,000 for the figures above
			base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			h := &partitionHarness{t: t, prod: &recordingProducer{}, now: base, chunk: 25000, budget: time.Hour}
			h.open()
			h.advance(base)
			h.drain()
			ts := base
			if owing {
				ts = base.Add(-30 * time.Second) // a late put: owes 10:00 .. behind W
			}
			start := time.Now()
			for i := range n {
				h.command(fmt.Sprintf("j%06d", i), ts, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h"}}`)
			}
			h.drain()
			t.Logf("%d puts: %s", n, time.Since(start))
			sh := h.shard()
			sh.Advancing, sh.PassAt, sh.PassKey = base.Add(time.Hour), base.Add(30*time.Minute), "zzz"
			require.NoError(t, h.st.Set(h.shardKey(), codecs.EncodeShardRecord(sh)))
			start = time.Now()
			_, done, err := h.s.restoreCuts(h.st, sh, store.Due{}, start)
			require.NoError(t, err)
			require.True(t, done, "within an hour's budget")
			el := time.Since(start)
			due, err := h.st.DueOf("j000000")
			require.NoError(t, err)
			t.Logf("restoreCuts over %d entries behind the cursor: %s (%.2f µs/entry); j000000 now due %s", n, el, float64(el.Microseconds())/float64(n), due.Format(time.RFC3339))
			if owing {
				// Owing since the watermark: handled only through the
				// cursor's time (restoredThrough), so it moves to its
				// first time after it.
				require.Equal(t, base.Add(31*time.Minute), due, "a late put's entry moves past the cursor's time")
			} else {
				// Handled through T: it moves where rederive would put it
				// once the pass completes (adversary round 27).
				require.Equal(t, base.Add(61*time.Minute), due, "an ordinary job handled through T moves past T")
			}
		})
	}
}
