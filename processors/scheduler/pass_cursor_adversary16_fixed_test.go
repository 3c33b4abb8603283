package scheduler

import (
	"testing"
	"time"
)

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
