package scheduler

import (
	"testing"
	"time"
)

// TestAdv16PausedOwedFiresTwoPayloadsAfterCleanRebalance: promise "no
// fire_id is ever dispatched with two different payloads" (and "a clean
// rebalance should repeat nothing").
//
// A job paused at 10:03 (consumed while the watermark was 10:00) owes
// 10:01..10:03. The pass to 10:10 fires them in its first chunk (its
// settle is queued), yields, and yields again at (10:05, b). A clean
// rebalance: the new owner derives the paused job at 10:01 from its record
// (the settle is still in the loopback). A put with a new payload on the
// paused job, consumed there before the settle, asks pausedHandled, which
// does not read the pass's cursor: the job is handled through 10:00:59.999,
// the put owes 10:01.. under the new definition, and p@10:01..10:03 go out
// again with the new payload. (passedEntry was consulted only for active
// jobs.)
func TestAdv16PausedOwedFiresTwoPayloadsAfterCleanRebalance(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	h.command("p", base, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":1}}}`)
	h.command("b", base, `{"v":1,"op":"put","job":{"cron":"5 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"b":1}}}`)
	h.command("c", base, `{"v":1,"op":"put","job":{"cron":"7 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"c":1}}}`)
	// A pause with record time 10:03, consumed before the next advance.
	h.command("p", base.Add(3*time.Minute), `{"v":1,"op":"pause"}`)
	T := base.Add(10 * time.Minute)
	h.advance(T)                 // chunk 1: p's owed 10:01..10:03, yields
	h.deliverLoops(h.shardKey()) // chunk 2: b@10:05, yields
	for m := 1; m <= 3; m++ {
		id := "p@" + base.Add(time.Duration(m)*time.Minute).Format(time.RFC3339)
		if n := len(h.fired()[id]); n != 1 {
			t.Fatalf("%s sent %d times by the pass, want 1", id, n)
		}
	}
	h.moveToEmptyStore("p", "b", "c") // clean; p's settle stays queued
	h.command("p", T, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":2}}}`)
	// The next advance trigger (chronos-shard-triggers, another topic) is
	// consumed there before the loopbacks (p's settle, the continuation).
	h.advance(T.Add(time.Minute))
	h.drain()
	h.advance(T.Add(2 * time.Minute))
	h.drain()
	h.requireOnePayload()
	if d := dupFires(h); len(d) > 0 {
		t.Errorf("after a clean rebalance mid-advance, %d fire_ids went out twice: %v", len(d), d)
	}
}

// TestAdv16FreshAdvanceOnNewOwnerRefiresBehindCursor: promise "duplicates
// only after a crash (a clean rebalance should repeat nothing)".
//
// The pass to 10:10 has fired a (10:01..10:10) and b (10:05) and recorded
// its cursor (10:05, b) when a clean rebalance hands the partition over.
// The new owner consumes the next advance trigger (10:11, on
// chronos-shard-triggers) before the continuation (on the loopback): a
// pass begun while another is under way runs from the start of the due
// index (fromStart) and ignores the recorded cursor, and the new owner's
// index, derived from the table, holds a at 10:01 and b at 10:05 again:
// a@10:01..10:10 and b@10:05 go out a second time.
func TestAdv16FreshAdvanceOnNewOwnerRefiresBehindCursor(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	h.command("a", base, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":1}}}`)
	h.command("b", base, `{"v":1,"op":"put","job":{"cron":"5 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"b":1}}}`)
	h.command("c", base, `{"v":1,"op":"put","job":{"cron":"7 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"c":1}}}`)
	T := base.Add(10 * time.Minute)
	h.advance(T)                 // chunk 1: a (10:01..10:10), yields
	h.deliverLoops(h.shardKey()) // chunk 2: b@10:05, yields
	if sh := h.shard(); sh.PassKey != "b" || !sh.Advancing.Equal(T) {
		t.Fatalf("shard %+v, want an advance to 10:10 at (10:05, b)", sh)
	}
	// A clean rebalance; the new owner runs an advance in one callback.
	h.chunk, h.budget = 100, time.Hour
	h.moveToEmptyStore("a", "b", "c")
	h.advance(T.Add(time.Minute)) // the next tick, before the continuation
	h.drain()
	h.requireOnePayload()
	if d := dupFires(h); len(d) > 0 {
		t.Errorf("after a clean rebalance mid-advance, %d fire_ids went out twice: %v", len(d), d)
	}
}
