//go:build adversary16

package scheduler

import (
	"sort"
	"testing"
	"time"
)

// dupFires lists every fire_id dispatched more than once.
func dupFires(h *partitionHarness) []string {
	var out []string
	for id, ps := range h.fired() {
		if len(ps) > 1 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// TestAdv16CursorUnderClaimsManyTimesBeforeT: promise "duplicates only
// after a crash (a clean rebalance should repeat nothing)".
//
// A job with several scheduled times before the pass's T ("a", every 1m,
// due 10:01 in a pass to 10:10) is fired by the pass through 10:10 in its
// first chunk. The cursor later stands at (10:05, b). A clean rebalance
// hands the partition to an empty store: "a" derives at 10:01 (stale),
// behind the cursor, so passedEntry says "handled through the cursor's
// time" - 10:04:59.999 - while the pass had sent it through 10:10. A put
// on "a" consumed by the new owner during the continuation then sends
// a@10:05 .. a@10:10 again (same payload, but after a clean rebalance).
func TestAdv16CursorUnderClaimsManyTimesBeforeT(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	job := `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":1}}}`
	h.command("a", base, job)
	h.command("b", base, `{"v":1,"op":"put","job":{"cron":"5 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"b":1}}}`)
	h.command("c", base, `{"v":1,"op":"put","job":{"cron":"7 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"c":1}}}`)
	T := base.Add(10 * time.Minute)
	h.advance(T)                 // chunk 1: a (10:01..10:10), yields
	h.deliverLoops(h.shardKey()) // chunk 2: b@10:05, yields
	sh := h.shard()
	t.Logf("shard after two chunks: advancing %s cursor (%s, %q)", sh.Advancing.Format("15:04:05"), sh.PassAt.Format("15:04:05"), sh.PassKey)
	if sh.PassKey != "b" {
		t.Fatalf("cursor at %q, want b", sh.PassKey)
	}
	for m := 1; m <= 10; m++ {
		id := "a@" + base.Add(time.Duration(m)*time.Minute).Format(time.RFC3339)
		if n := len(h.fired()[id]); n != 1 {
			t.Fatalf("%s sent %d times by the pass, want 1", id, n)
		}
	}
	// A clean rebalance (nothing lost, every output committed).
	h.moveToEmptyStore("a", "b", "c")
	// The new owner consumes a put on a (new payload) before the pass's
	// continuation.
	h.command("a", T, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":2}}}`)
	h.drain()
	h.advance(T.Add(2 * time.Minute))
	h.drain()
	h.requireOnePayload()
	if d := dupFires(h); len(d) > 0 {
		t.Errorf("after a clean rebalance mid-advance, %d fire_ids went out twice: %v", len(d), d)
	}
}

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
// again with the new payload. (passedEntry is consulted only for active
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

// TestAdv16CursorUnderClaimLatePauseThenPutTwoPayloads: promise "no
// fire_id is ever dispatched with two different payloads" (no crash, one
// clean rebalance, no loopback consumed out of its order).
//
// As TestAdv16CursorUnderClaimsManyTimesBeforeT: the pass to 10:10 sends
// a@10:01..10:10 (payload 1) in its first chunk and yields at (10:05, b);
// a clean rebalance hands the partition to an empty store, where "a"
// derives at 10:01. Two commands produced during the handover are
// consumed there: a pause (record time 10:06) and a put (record time
// 10:07, payload 2). The pause asks handled(): passedEntry says "a" is
// handled through the cursor's time only (10:04:59.999; the pass had sent
// it through 10:10), so the pause records Through 10:06. The put on the
// paused job starts after max(its ts, Through) = 10:07 and owes 10:08 ..
// 10:10, which the next advance sends with payload 2. On the store that
// followed the pass, the pause records Through 10:10 and the put owes
// nothing before 10:11.
func TestAdv16CursorUnderClaimLatePauseThenPutTwoPayloads(t *testing.T) {
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
	h.moveToEmptyStore("a", "b", "c")
	h.command("a", base.Add(6*time.Minute), `{"v":1,"op":"pause"}`)
	h.command("a", base.Add(7*time.Minute), `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":2}}}`)
	h.drain()
	h.advance(T.Add(time.Minute))
	h.drain()
	h.requireOnePayload()
}
