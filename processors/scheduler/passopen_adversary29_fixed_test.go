package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv29CutsLostPausePutTwoPayloads: promise (docs/topics.md, "Delivery
// guarantees"): no fire_id is ever dispatched with two different payloads.
// Found by adversary round 29 (2026-12-04), fixed the same day: maybeSent
// also answers for a job passedThrough moved while PassCutsLost is set, so
// the pause first sends a000's times up to T under A.
//
// When the pass's cut list overflows (PassCutsLost), passedThrough takes a
// job whose derived entry is behind the cursor as handled only through
// just before the cursor's time, while the pass handled it through T. A
// late pause (ts before the job's next time after the cursor's time), then
// a put, on the new owner after a clean rebalance, owe that time again
// under the put's payload.
//
// History: adversary round 24's (TestAdv24CutsLostCleanRebalanceRepeats):
// a000..a004 cron "3,15 * * * * *" (each sends 10:00:03 and 10:00:15 in one
// plan, handled through T, record unchanged), j000..j069 every 1s cut one by
// one until the yield records PassCutsLost (cursor 10:00:06, j06x). Then a
// clean rebalance to an empty store; there a pause of a000 with ts 10:00:10
// and a put of a000 (payload B) with ts 10:00:11, then the continuation.
//
// Expected: a000@10:00:15 with one payload. Got: A (the pass, before the
// move) and B (after the put). No crash is needed, and PassOpen plays no
// part (the last yield cleared it): it fails on 3bb2402~1 too. Cause:
// decide_due.go:256-257 (passedThrough under PassCutsLost is a lower
// bound: through just before the cursor's time), and maybeSent
// (commands.go:474) answers only for PassOpen, so the pause at
// commands.go:331 handles a000 only through 10:00:14.999.
func TestAdv29CutsLostPausePutTwoPayloads(t *testing.T) {
	t.Parallel()
	h, T := adv24CutsLostPass(t, func(h *partitionHarness) {
		require.Contains(t, h.fired(), "a000@2026-03-01T10:00:15Z", "sent before the move")
		h.command("a000", adv24Base.Add(10*time.Second), `{"v":1,"op":"pause"}`)
		h.command("a000", adv24Base.Add(11*time.Second), `{"v":1,"op":"put","job":{"cron":"3,15 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"B"}}}`)
	})
	h.advance(T.Add(time.Second))
	h.drain()
	h.advance(T.Add(time.Minute))
	h.drain()
	h.requireOnePayload()
}

// TestAdv29BeginOnlyContinuationPausePut: promise (docs/topics.md,
// "Delivery guarantees"): no fire_id is ever dispatched with two different
// payloads. Found by adversary round 29 (2026-12-04) as a regression of
// 3bb2402, fixed the same day by the same change as
// TestAdv29CutsLostPausePutTwoPayloads.
//
// The pass's first callback writes its start durably (Advancing T, no
// cursor, PassOpen), fires a@12:00:01..03 with A and dies after its
// continuation reached the loopback topic and before its yield's shard
// record reached the changelog (goka produces both asynchronously). The
// new owner consumes that continuation (cursor (12:00:01, a)) before the
// advance is delivered again: it runs after the cursor as a continuation;
// its yield, on a record with Advancing and no cursor, is a "new pass"
// that records PassCutsLost (decide_due.go passYield). A command on a then
// reads a as handled only through just before the new cursor's time
// (12:00:02, b) (passedThrough's PassCutsLost rule): a's next time,
// (12:00:02, a), is at or behind that cursor, so maybeSent says no. A late
// pause (ts 12:00:01.5) handles a through 12:00:01.999 and a put with B
// owes a@12:00:02 again.
//
// Expected: a@12:00:02 with one payload. Got: A (first owner) and B, for
// a@12:00:02 and a@12:00:03. A regression of 3bb2402: on 3bb2402~1 the same
// history passes (the lost callback left no shard record, the
// continuation's yield was a pass of its own with its cuts kept, and a,
// behind its cursor, read as handled through T). Cause: beginDurably's
// record (fanout.go, Advancing set with no cursor) makes passYield
// (decide_due.go:221) take the continuation for a pass begun during
// another and set PassCutsLost; passedThrough's PassCutsLost bound
// (decide_due.go:256-257) then puts a's next time at the new cursor's
// time, with a key before the cursor's, where maybeSent (commands.go:474,
// after the cursor only) does not look.
func TestAdv29BeginOnlyContinuationPausePut(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarnessBudget(t, 1, time.Nanosecond, now), changelog: map[string][]byte{}}
	l.advance(now)
	puts := map[string]string{
		"a": `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`,
		"b": `{"v":1,"op":"put","job":{"every":"1s","start":"2026-03-01T12:00:02Z","payload":{"p":"A"}}}`,
		"c": `{"v":1,"op":"put","job":{"every":"1s","start":"2026-03-01T12:00:03Z","payload":{"p":"A"}}}`,
	}
	for i, id := range []string{"a", "b", "c"} {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, now, int64(i), []byte(puts[id]), false)
	}
	// The first callback: a fires, its shard record is lost; its
	// continuation is on the loopback topic.
	t3 := now.Add(3 * time.Second)
	adv := l.trigger(t3, true)
	require.Contains(t, l.fired(), "a@2026-03-01T12:00:02Z")
	require.Len(t, l.loops, 1)
	l.moveToNewOwner()
	require.True(t, l.shard().PassOpen, "the start is durable")
	// The continuation first, one callback (b).
	cont := l.loops[0]
	l.loops = nil
	l.off++
	l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), cont.Key, t3, l.off, cont.Value, false)
	sh := l.shard()
	t.Logf("after the continuation's callback: advancing %v cursor (%v, %q) cuts lost %v open %v", sh.Advancing, sh.PassAt, sh.PassKey, sh.PassCutsLost, sh.PassOpen)
	// A late pause of a, then a put.
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "a", now.Add(1500*time.Millisecond), 10, []byte(`{"v":1,"op":"pause"}`), false)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "a", now.Add(1600*time.Millisecond), 11, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`), false)
	// The advance delivered again, the rest.
	l.off++
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t3, l.off, adv, false)
	l.drainLoops()
	l.advance(now.Add(5 * time.Second))
	l.requireOnePayload()
}
