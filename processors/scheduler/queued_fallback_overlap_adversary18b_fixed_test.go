package scheduler

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv18bDeliverFirstLoop delivers the oldest queued loopback only.
func (h *partitionHarness) adv18bDeliverFirstLoop() {
	h.t.Helper()
	require.NotEmpty(h.t, h.loops)
	l := h.loops[0]
	h.loops = h.loops[1:]
	h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
}

// TestAdv18bFallbackOverlapTwoPayloadsAfterCleanRebalance: promise
// (docs/topics.md "Updates, deletes and versions", docs/reliability.md):
// no fire_id is ever dispatched with two different payloads; duplicates
// only after a crash.
//
// bc71baf makes passes wait for each other (ShardRecord.Queued) and
// reports simulation seed 110079 x 3000 fixed so. But queueAdvance's
// fallback (maxQueuedWaits = 60 advances consumed while the pass under way
// did not continue) still begins a pass beside the one under way, from
// the start of the index, with PassCutsLost: exactly the overlap 110079
// needed. The docs name when it happens: "a backlog of advances consumed
// ahead of it (a new owner after an outage)". No crash is needed: a clean
// rebalance then stands in for 110079's wiping crash.
//
// Inputs (chunk 1, every chunk its own callback): a cron "30 * * * * *",
// j every 1s put at 10:00:40 (payload J1). Advance to 10:01:00 fires a
// (10:00:30) and yields (cursor (10:00:30, a)). 61 advances (10:01:01 ..
// 10:02:01) are consumed before its continuation: 60 wait, the 61st
// begins the pass to 10:02:01 beside it, which fires j's 10:00:41 ..
// 10:02:01 and yields at cursor (10:00:41, j). The pass to 10:01:00 then
// completes (watermark 10:01:00). A clean rebalance to an empty store: the
// new owner derives j at 10:01:01, after the later pass's cursor, so
// passedThrough cannot tell it was handled. A late pause of j (ts
// 10:01:00), then a put of j (payload J2).
//
// Expected: each of j's fire_ids 10:01:01 .. 10:02:01 goes out once, with
// J1. Got: they go out again with J2 (the put owes them under the new
// definition). Severity: medium (two payloads for one fire_id, no crash;
// needs a minute's backlog of advances ahead of a continuation, which the
// docs themselves name as the fallback's case). Same mechanism as 110079
// (open on f55e16f through other inputs); these exact inputs pass on
// f55e16f (every advance began its own pass there, and the passes
// completed to 10:02:01 before the rebalance), so this failure is new in
// bc71baf: the queue holds the 60 advances, and the fallback then makes
// exactly the shape 110079 needed (an earlier pass with a cursor, a later
// one from the start with PassCutsLost).
func TestAdv18bFallbackOverlapTwoPayloadsAfterCleanRebalance(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	h.command("a", base, `{"v":1,"op":"put","job":{"cron":"30 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"a":1}}}`)
	h.command("j", base.Add(40*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":1}}}`)
	T1 := base.Add(time.Minute)
	h.advance(T1) // fires a@10:00:30, yields
	require.Len(t, h.loops, 1, "the pass to 10:01:00 yielded")
	require.Equal(t, "a", h.shard().PassKey)
	for i := 1; i <= 61; i++ {
		h.advance(T1.Add(time.Duration(i) * time.Second))
	}
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(T1), "no pass began beside the one under way: %+v", sh)
	require.Len(t, h.loops, 2, "its continuation, and the same sent again by the 61st advance")
	h.adv18bDeliverFirstLoop() // the pass to 10:01:00 continues
	before := len(h.fired())

	h.moveToEmptyStore("a", "j") // clean rebalance
	h.command("j", T1, `{"v":1,"op":"pause"}`)
	h.command("j", T1, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":2}}}`)
	h.drain()
	h.advance(T1.Add(62 * time.Second))
	h.drain()
	t.Logf("fire_ids before the rebalance %d, after %d", before, len(h.fired()))
	adv18bRequireOnePayload(t, h)
}

// adv18bRequireOnePayload fails once, with a count and an example, if a
// fire_id went out with two payloads.
func adv18bRequireOnePayload(t *testing.T, h *partitionHarness) {
	t.Helper()
	var two []string
	for id, ps := range h.fired() {
		for _, p := range ps[1:] {
			if p != ps[0] {
				two = append(two, id+" "+strings.Join(ps, " then "))
				break
			}
		}
	}
	sort.Strings(two)
	if len(two) > 0 {
		t.Errorf("%d fire_ids dispatched with two payloads, first %s, last %s", len(two), two[0], two[len(two)-1])
	}
}
