package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv17cKeepEntryMarksTheFutureHandled: promise (docs/topics.md,
// "Updates, deletes and versions": an update first dispatches what the job
// owes up to the shard's time, "then the new definition applies to the
// times after that"; "an update consumed ahead of the shard's time ...
// drops nothing: the times in between go out under the new definition";
// "Delivery guarantees": no fire lost).
//
// keepEntry (6c1270b) sets Through = entry-1ns, OwedAt = shardNow when a
// record copy (here an accepted backfill) is written between an advance's
// callbacks after the pass fired the job. The entry the pass moved the job
// to is its next time AFTER the advance's T (12:02:00), so Through becomes
// 12:01:59.999999999, a time in the future of the shard (the advance is to
// 12:01:00), and it is never clamped to the shard's time the way
// settledRecord clamps (a caught-up job gets no Through). OwedAt = 12:01:00
// is not before the watermark once the advance completes, so the record
// keeps saying "handled through 12:01:59.999999999". An update then takes
// that as what the old definition handled (handled(): HandledThrough) and
// the new definition starts after it.
//
// Inputs: jobs j, k, l every 1m put at 12:00:00; chunk 1, budget 1ns. The
// advance to 12:01:00 fires j and k in its first callbacks and yields; a
// backfill of k (accepted) arrives then. The advance completes. A put of
// k at 12:01:00 changes it to every 1s (payload v2). Advances to
// 12:01:01..12:01:10 follow. No crash. The same with a backfill refused
// (one in progress) or a cancel_backfill in place of the accepted backfill.
//
// Expected: k@12:01:01 .. k@12:01:10 dispatched under the new definition
// (as they are without the backfill: the control subtest). Got: none of
// them; k's next fire is 12:02:00 — ten fires (in general everything the
// new definition has before the old definition's next time) lost.
// Severity: lost fires, no crash, from an ordinary backfill (or
// cancel_backfill, or a refused backfill) mid-advance.
func TestAdv17cKeepEntryMarksTheFutureHandled(t *testing.T) {
	t.Parallel()
	bf := `{"v":1,"op":"backfill","from":"2026-03-01T11:00:00Z","to":"2026-03-01T11:05:00Z"}`
	for _, tc := range []struct{ name, before, mid string }{
		{"control", "", ""},
		{"backfill accepted mid-advance", "", bf},
		{"backfill refused mid-advance", bf, bf},
		{"cancel_backfill mid-advance", bf, `{"v":1,"op":"cancel_backfill"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			h := newPartitionHarnessBudget(t, 1, time.Nanosecond, t0)
			h.advance(t0)
			h.drain()
			for _, id := range []string{"j", "k", "l"} {
				h.command(id, t0, `{"v":1,"op":"put","job":{"every":"1m","payload":{"id":"`+id+`"}}}`)
				h.drain()
			}
			if tc.before != "" {
				h.command("k", t0, tc.before)
				h.drain()
			}
			t1 := t0.Add(time.Minute)
			h.advance(t1)
			h.deliverLoops(h.shardKey())
			require.Len(t, h.fired()["k@2026-03-01T12:01:00Z"], 1, "k@12:01:00 fired before the command")
			require.False(t, h.shard().Advancing.IsZero(), "the advance is still under way")
			if tc.mid != "" {
				h.command("k", t1, tc.mid)
			}
			h.drain()
			require.True(t, h.shard().Watermark.Equal(t1), "the advance completed")
			h.command("k", t1, `{"v":1,"op":"put","job":{"every":"1s","payload":{"id":"k","v":2}}}`)
			h.drain()
			for i := 1; i <= 10; i++ {
				h.advance(t1.Add(time.Duration(i) * time.Second))
				h.drain()
			}
			for i := 1; i <= 10; i++ {
				fid := "k@" + t1.Add(time.Duration(i)*time.Second).Format(time.RFC3339)
				if len(h.fired()[fid]) == 0 {
					t.Errorf("%s never dispatched (the update to every 1s applies after 12:01:00)", fid)
				}
			}
			h.requireOnePayload()
		})
	}
}
