package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv18bFallbackOverlapRefiresAfterCleanRebalance: promise
// (docs/reliability.md, docs/topics.md "Delivery guarantees"): duplicates
// only after a crash; a clean rebalance repeats nothing.
//
// bc71baf reports TestAdv16FreshAdvanceOnNewOwnerRefiresBehindCursor
// passing because passes no longer overlap. The fallback of queueAdvance
// (maxQueuedWaits = 60 advances consumed while the pass under way did not
// continue; the docs name "a backlog of advances consumed ahead of it (a
// new owner after an outage)") still begins a pass beside it, from the
// start of the index, and a clean rebalance in that state re-sends what
// the later pass fired.
//
// Inputs (chunk 1, every chunk its own callback): a cron "30 * * * * *",
// j every 1s put at 10:00:40. Advance to 10:01:00 fires a@10:00:30 and
// yields. 61 advances (10:01:01 .. 10:02:01) are consumed before its
// continuation: 60 wait, the 61st begins the pass to 10:02:01 beside it,
// which fires j@10:00:41 .. 10:02:01 (81 fires) and yields (cursor
// (10:00:41, j), PassCutsLost). A clean rebalance to an empty store (the
// table as it is); the new owner consumes both continuations and the
// next advance.
//
// Expected: nothing goes out twice. Got: j@10:00:41 .. 10:02:01, all 81,
// go out a second time (same payload). Without the rebalance nothing
// repeats. Severity: low-medium (duplicates without a crash; consumers
// dedupe on fire_id), needs the 60-advance backlog. The mechanism is
// adversary 16's (TestAdv16FreshAdvanceOnNewOwnerRefiresBehindCursor, open
// on f55e16f); bc71baf narrowed it to the fallback, which its docs present
// as "as before", while reliability.md now lists the adversary 16 test as
// passing. These exact inputs pass on f55e16f (its passes had completed to
// 10:02:01 before the rebalance): new in bc71baf.
func TestAdv18bFallbackOverlapRefiresAfterCleanRebalance(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	h.command("a", base, `{"v":1,"op":"put","job":{"cron":"30 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"a":1}}}`)
	h.command("j", base.Add(40*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":1}}}`)
	T1 := base.Add(time.Minute)
	h.advance(T1) // fires a@10:00:30, yields
	for i := 1; i <= 61; i++ {
		h.advance(T1.Add(time.Duration(i) * time.Second))
	}
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(T1), "no pass began beside the one under way: %+v", sh)
	require.Len(t, h.loops, 2, "its continuation, and the same sent again by the 61st advance")
	require.Empty(t, dupFires(h))

	h.moveToEmptyStore("a", "j") // clean rebalance
	h.drain()
	h.advance(T1.Add(62 * time.Second))
	h.drain()
	if d := dupFires(h); len(d) > 0 {
		t.Errorf("after a clean rebalance, %d fire_ids went out twice: %s .. %s", len(d), d[0], d[len(d)-1])
	}
}
