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

// TestAdv16PausedOwedFiresTwoPayloadsJitterPut: promise "no fire_id is
// ever dispatched with two different payloads" (no crash; one clean
// rebalance; loopbacks in their own order).
//
// As TestAdv16PausedOwedFiresTwoPayloadsAfterCleanRebalance, but the put
// on the paused job (consumed by the new owner before the old owner's
// settle) also gives it a jitter, and every loopback is then delivered in
// order before the next advance. The new owner's pausedHandled reads the
// stale entry 10:01 (the pass's cursor is not consulted for a paused job):
// the put owes the scheduled times from 10:01 on. The settle that would
// have raised the record to 10:03 carries the old jitter (0) and is
// dropped as stale (settle: "under another jitter ... staleLoop"), so the
// next advance sends p@10:01..10:03 with the put's payload.
func TestAdv16PausedOwedFiresTwoPayloadsJitterPut(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	h.command("p", base, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":1}}}`)
	h.command("b", base, `{"v":1,"op":"put","job":{"cron":"5 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"b":1}}}`)
	h.command("c", base, `{"v":1,"op":"put","job":{"cron":"7 * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"c":1}}}`)
	h.command("p", base.Add(3*time.Minute), `{"v":1,"op":"pause"}`)
	T := base.Add(10 * time.Minute)
	h.advance(T)                      // chunk 1: p's owed 10:01..10:03, yields
	h.deliverLoops(h.shardKey())      // chunk 2: b@10:05, yields
	h.moveToEmptyStore("p", "b", "c") // clean; p's settle stays queued
	h.command("p", T, `{"v":1,"op":"put","job":{"every":"1m","jitter":"10s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":2}}}`)
	h.drain() // p's settle (dropped: another jitter), the continuation, ...
	h.advance(T.Add(time.Minute))
	h.drain()
	h.advance(T.Add(2 * time.Minute))
	h.drain()
	h.requireOnePayload()
}

// TestAdv16CursorUnderClaimsManyTimesBeforeT: promise "duplicates only
// after a crash (a clean rebalance should repeat nothing)".
//
// A job with several scheduled times before the pass's T ("a", every 1m,
// due 10:01 in a pass to 10:10) is fired by the pass through 10:10 in its
// first chunk. The cursor later stands at (10:05, b). A clean rebalance
// hands the partition to an empty store: "a" derives at 10:01 (stale),
// behind the cursor, so passedEntry (since replaced by passedThrough) said "handled through the cursor's
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

// TestAdv16CursorUnderClaimLatePauseThenPutTwoPayloads: promise "no
// fire_id is ever dispatched with two different payloads" (no crash, one
// clean rebalance, no loopback consumed out of its order).
//
// As TestAdv16CursorUnderClaimsManyTimesBeforeT: the pass to 10:10 sends
// a@10:01..10:10 (payload 1) in its first chunk and yields at (10:05, b);
// a clean rebalance hands the partition to an empty store, where "a"
// derives at 10:01. Two commands produced during the handover are
// consumed there: a pause (record time 10:06) and a put (record time
// 10:07, payload 2). The pause asks handled(): passedEntry (since replaced by passedThrough) said "a" is
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
