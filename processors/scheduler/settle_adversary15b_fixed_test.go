package scheduler

import (
	"testing"
	"time"
)

// TestAdv15bOwnSettleIgnoresItsTOnARebuiltIndex breaks docs/topics.md:
// "no `fire_id` is ever dispatched with two different payloads", and "A
// `put` on a paused job also stays clear of the pause: it owes the times
// after the later of `ts` and what was handled ... What a paused job has
// handled is ... one that still owed fires, through the last of them
// dispatched."
//
// Found by the simulation: seed 20237 x 1500 operations (outside the
// ranges being run), replayed and reduced here.
//
// Mechanism: a job paused while it still owed fires from before its pause
// (a late pause: Through 10:10:57, pause ts 10:11:00.562) has them sent by
// the next advance, which is spread over two callbacks (Advancing 10:11:00,
// the continuation queued). The chunk that sent 10:10:58..10:11:00 queued
// a settle whose T (since 8f581ec, decide_due.go) says how far its fires
// went: 10:11:00. The partition then moves to an instance with an empty
// store. Its due index, derived from the table, puts the paused job back
// at 10:10:58 (the record never learnt). The settle is consumed there
// *before* any put (so this is not the known "put consumed before an old
// version's settle"): but it is a settle of the job's *own* version, and
// settle() then reads only the local due entry (10:10:58, stale) and
// ignores tr.T, so the record learns nothing (Through 10:10:57.999). Only
// a settle of *another* version uses T (sentRecord). The put on the paused
// job then owes from 10:10:57.999 (owesBeforePause: 10:10:58 is before the
// pause) and sends 10:10:58, :59 and 10:11:00 again with its own payload.
func TestAdv15bOwnSettleIgnoresItsTOnARebuiltIndex(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 10, 50, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.advance(base)
	h.drain()
	h.command("j4", base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_once","misfire_grace":"20s","payload":{"put":1}}}`)
	// Another job due in the same advance, so that the advance to 10:11:00
	// yields after j4's chunk.
	h.command("j5", base, `{"v":1,"op":"put","job":{"every":"10s","payload":{"other":1}}}`)
	h.advance(base.Add(7 * time.Second)) // 10:10:57
	h.drain()
	// A late pause: record time 10:11:00.562, consumed at 10:10:57.
	h.command("j4", base.Add(10*time.Second+562*time.Millisecond), `{"v":1,"op":"pause"}`)
	// The advance to 10:11:00 sends j4's 10:10:58..10:11:00 (owed before
	// its pause) in its first callback and queues its continuation and
	// j4's settle.
	h.advance(base.Add(10 * time.Second))
	for _, ts := range []string{"10:10:58", "10:10:59", "10:11:00"} {
		if got := h.fired()["j4@2026-03-01T"+ts+"Z"]; len(got) != 1 {
			t.Fatalf("j4@%s dispatched %d times before the move, want 1", ts, len(got))
		}
	}
	if sh := h.shard(); sh.Advancing.IsZero() {
		t.Fatalf("the advance did not yield: %+v", sh)
	}
	// The partition moves to an instance with an empty data dir.
	h.moveToEmptyStore("j4", "j5") // (without the move the test passes)
	h.deliverLoops("j4")           // the settle, first
	// Then a put on the paused job, consumed before the advance's
	// continuation.
	h.command("j4", base.Add(10*time.Second+562*time.Millisecond), `{"v":1,"op":"put","job":{"every":"5s","misfire_policy":"skip","misfire_grace":"20s","payload":{"put":2}}}`)
	h.drain()
	h.advance(base.Add(20 * time.Second))
	h.drain()
	h.requireOnePayload()
}
