package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Adversary round 41: attacks on 8328245 (sendOwed plans the owed times
// after the watermark against the first advance announced at or after
// each: passOf, graceAt).
//
// Status: each failed on 4cfa8d3; the first four were new in 8328245 (the
// rest failed on 5c30e94 too). Fixed since: sendOwed plans each time as
// the pass that would reach it plans it (passOf: the pass under way only
// for an entry ahead of its cursor, else the first advance waiting at or
// after it), cuts only at a pass's T, never at the watermark, and
// dispatches the segments together, settling the record after each batch.

var adv41Base = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// adv41Fire is one dispatched scheduled fire of a job.
type adv41Fire struct {
	At      time.Time
	Missed  int64
	Payload string
}

// adv41Fires is job id's scheduled fires, in dispatch order.
func adv41Fires(t *testing.T, h *partitionHarness, id string) []adv41Fire {
	t.Helper()
	var out []adv41Fire
	for _, m := range h.prod.msgs {
		d, err := codecs.DecodeDispatch(m.Value)
		require.NoError(t, err)
		if d.JobID != id || d.Trigger != codecs.TriggerSchedule {
			continue
		}
		out = append(out, adv41Fire{At: d.ScheduledAt.UTC(), Missed: d.Missed, Payload: string(d.Payload)})
	}
	return out
}

// adv41Times is the set of scheduled times of fires, formatted, sorted.
func adv41Times(fires []adv41Fire) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fires {
		s := f.At.Format("15:04:05.000")
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func adv41Missed(fires []adv41Fire) int64 {
	var n int64
	for _, f := range fires {
		n += f.Missed
	}
	return n
}

func adv41String(fires []adv41Fire) string {
	var b strings.Builder
	for _, f := range fires {
		b.WriteString(f.At.Format("15:04:05.000"))
		if f.Missed != 0 {
			fmt.Fprintf(&b, "(missed %d)", f.Missed)
		}
		fmt.Fprintf(&b, "[%s] ", f.Payload)
	}
	return b.String()
}

// adv41LateJobWorld: two fillers (a, b: every 1s from 10:00:00) make the
// pass to T1 = 10:00:01 yield after its first chunk (chunk 1, every chunk a
// callback of its own). A late put of j (every 1s, skip, grace 3s, record
// time 09:59:50) is consumed then: its first time, 09:59:51, is behind the
// watermark (10:00:00) and behind the pass's cursor, so "it goes out with
// the next advance" (docs/topics.md). Advances 10:00:02 .. 10:00:0n follow.
//
// wait: the pass to T1 is slow (its continuation not consumed yet), so the
// advances after it wait in Queued, and then cmd (j's command, at cmdTS) is
// consumed. Not wait: every pass runs as soon as its advance arrives (the
// continuation consumed at once), cmd after the same advances.
func adv41LateJobWorld(t *testing.T, wait bool, n int, cmdTS time.Time, cmd string) *partitionHarness {
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, adv41Base)
	h.advance(adv41Base)
	h.drain()
	filler := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`
	h.command("a", adv41Base, filler)
	h.command("b", adv41Base, filler)
	T1 := adv41Base.Add(time.Second)
	h.advance(T1)
	require.Len(t, h.loops, 1, "the pass to T1 yielded")
	if !wait {
		h.drain()
	}
	h.command("j", adv41Base.Add(-10*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"3s","payload":{"j":1}}}`)
	for i := 2; i <= n; i++ {
		h.advance(adv41Base.Add(time.Duration(i) * time.Second))
		if !wait {
			h.drain()
		}
	}
	if wait {
		sh := h.shard()
		require.True(t, sh.Advancing.Equal(T1), "the pass to T1 is under way: %+v", sh)
		require.Len(t, sh.Queued, n-1, "the advances after it wait")
	}
	h.command("j", cmdTS, cmd)
	h.drain()
	h.advance(adv41Base.Add(time.Duration(n+5) * time.Second))
	h.drain()
	return h
}

// TestAdversary41LatePauseBehindWatermarkSendsSkippedTime: promise (the
// brief's, and docs/topics.md on a pause: the times it still sends go out
// "each late or not by the first advance announced at or after it, as that
// advance's own pass would judge it (a time its misfire policy skips there
// is not sent by the pause either)"; docs/topics.md "Missed and misfire
// policies": waiting behind another pass "does not make fires late"
// either): a fire's fate must not depend on whether its advance had to
// wait behind another pass.
//
// 8328245 plans by passOf only the times after the watermark; a time the
// watermark passed (a late job's, put while a pass was under way: its
// catch-up "goes out with the next advance") is still judged against the
// command's own time. Here the late put's times are judged by the advance
// to 10:00:02 when passes do not wait: 09:59:51 .. 09:59:58 are late (more
// than 3 s), 09:59:59 on are sent. With the passes waiting, a late pause
// (ts 10:00:00.500, consumed after the advances to 10:00:02 .. 10:00:05)
// sends 09:59:58 as on time against its ts, though the advance to
// 10:00:02, waiting, would skip it: exactly seed 4100273's symptom, one
// second behind the watermark instead of ahead of it.
func TestAdversary41LatePauseBehindWatermarkSendsSkippedTime(t *testing.T) {
	t.Parallel()
	pauseTS := adv41Base.Add(500 * time.Millisecond)
	ctrl := adv41Fires(t, adv41LateJobWorld(t, false, 5, pauseTS, `{"v":1,"op":"pause"}`), "j")
	got := adv41Fires(t, adv41LateJobWorld(t, true, 5, pauseTS, `{"v":1,"op":"pause"}`), "j")
	t.Logf("no wait: %s", adv41String(ctrl))
	t.Logf("waiting: %s", adv41String(got))
	require.NotContains(t, adv41Times(ctrl), "09:59:58.000", "the control skips 09:59:58 (4 s late at 10:00:02)")
	require.NotContains(t, adv41Times(got), "09:59:58.000",
		"a pause consumed while the advance to 10:00:02 waited sent 09:59:58, which that advance's own pass skips as 4 s late")
}

// TestAdversary41LateUpdateBehindWatermarkSkipsOnTimeTimes: the same
// promise, the other way: an update (put, consumed after the advances to
// 10:00:02 .. 10:00:11 queued behind the slow pass to 10:00:01) sends what
// j owes under its old definition first, and judges the times behind the
// watermark (09:59:51 .. 10:00:00) against until (10:00:11): all late,
// none sent. Without the wait, the advance to 10:00:02 sends 09:59:59 and
// 10:00:00 (within 3 s of it). Two fires lost to the wait.
func TestAdversary41LateUpdateBehindWatermarkSkipsOnTimeTimes(t *testing.T) {
	t.Parallel()
	upd := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"3s","payload":{"j":2}}}`
	ts := adv41Base.Add(11 * time.Second)
	ctrl := adv41Fires(t, adv41LateJobWorld(t, false, 11, ts, upd), "j")
	got := adv41Fires(t, adv41LateJobWorld(t, true, 11, ts, upd), "j")
	t.Logf("no wait: %s", adv41String(ctrl))
	t.Logf("waiting: %s", adv41String(got))
	require.Contains(t, adv41Times(ctrl), "09:59:59.000")
	require.Equal(t, adv41Times(ctrl), adv41Times(got), "the wait changed which of j's times went out")
}

// adv41BehindCursorWorld: a one-shot filler a at 10:00:03 makes the pass to
// A = 10:00:05 (the watermark 10:00:00) yield after it, cursor (10:00:03,
// a). A put of j (every 1s, skip, grace 3s, ts 10:00:00) is consumed then:
// its first time, 10:00:01, is after the watermark but behind the pass's
// cursor, so the pass to A never reaches it: "a job put while the advance
// was running, whose first fire lands behind the advance's position, is
// owed in its record and goes out with the next advance" (docs/topics.md),
// the advance to 10:00:06, which skips 10:00:01 and 10:00:02 (5 s and 4 s
// late). wait: that advance arrives while the pass to A is under way and
// waits in Queued, and cmd is consumed then; else the pass to A continues
// first, the advance to 10:00:06 has its pass, and cmd follows it.
func adv41BehindCursorWorld(t *testing.T, wait bool, cmdTS time.Time, cmd string) *partitionHarness {
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, adv41Base)
	h.advance(adv41Base)
	h.drain()
	h.command("a", adv41Base, `{"v":1,"op":"put","job":{"at":"2026-03-01T10:00:03Z","payload":{"a":1}}}`)
	h.command("b", adv41Base, `{"v":1,"op":"put","job":{"at":"2026-03-01T10:00:04Z","payload":{"b":1}}}`)
	A := adv41Base.Add(5 * time.Second)
	h.advance(A)
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(A), "the pass to A yielded: %+v", sh)
	require.Equal(t, "a", sh.PassKey, "cursor: %+v", sh)
	h.command("j", adv41Base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"3s","payload":{"j":1}}}`)
	if !wait {
		h.drain()
	}
	h.advance(adv41Base.Add(6 * time.Second))
	if !wait {
		h.drain()
	} else {
		sh := h.shard()
		require.True(t, sh.Advancing.Equal(A), "%+v", sh)
		require.Len(t, sh.Queued, 1)
	}
	h.command("j", cmdTS, cmd)
	h.drain()
	h.advance(adv41Base.Add(8 * time.Second))
	h.drain()
	return h
}

// TestAdversary41PauseBehindCursorJudgedAgainstPassThatNeverReachesIt:
// promise: docs/topics.md on a pause (its owed times go out "each late or
// not by the first advance announced at or after it, as that advance's own
// pass would judge it (a time its misfire policy skips there is not sent
// by the pause either)"), and a fire's fate must not depend on whether its
// advance had to wait behind another pass.
//
// passOf takes the first advance at or after each time after the
// watermark, here the pass under way to 10:00:05, as the one that plans it;
// but that pass's cursor is already past j's entry (put behind it), so the
// pass that plans j is the advance to 10:00:06, which skips 10:00:02 (4 s
// late). A late pause (ts 10:00:06.200) consumed while that advance waits
// judges 10:00:02 against 10:00:05 (3 s: on time) and sends it. Before
// 8328245 it was judged against the pause's until (10:00:06) and skipped:
// a regression of the fix.
func TestAdversary41PauseBehindCursorJudgedAgainstPassThatNeverReachesIt(t *testing.T) {
	t.Parallel()
	ts := adv41Base.Add(6200 * time.Millisecond)
	ctrl := adv41Fires(t, adv41BehindCursorWorld(t, false, ts, `{"v":1,"op":"pause"}`), "j")
	got := adv41Fires(t, adv41BehindCursorWorld(t, true, ts, `{"v":1,"op":"pause"}`), "j")
	t.Logf("no wait: %s", adv41String(ctrl))
	t.Logf("waiting: %s", adv41String(got))
	require.NotContains(t, adv41Times(ctrl), "10:00:02.000", "the advance to 10:00:06 skips 10:00:02")
	require.NotContains(t, adv41Times(got), "10:00:02.000",
		"the pause sent 10:00:02, judged against the pass to 10:00:05 whose cursor had passed j's entry")
}

// adv41WatermarkCutWorld: two late jobs behind the watermark (10:00:00): a
// filler a (fire_all, its first time 09:59:41) and j (every 1s, fire_once,
// grace 3s, put late with ts 09:59:50: first time 09:59:51). The advance
// to A = 10:00:10 (the clock was down ten seconds) handles a in its first
// chunk and yields, cursor (09:59:41, a): j's entry, after the cursor, is
// the pass's to plan, in one plan against A (docs/topics.md: "an advance
// to T dispatches every fire owed up to T of the jobs it finds, including a
// catch-up"). No advance waits. mid: cmd (on j) is consumed between the
// pass's callbacks; else after the pass completed.
func adv41WatermarkCutWorld(t *testing.T, mid bool, cmdTS time.Time, cmd string) *partitionHarness {
	return adv41WatermarkCutWorldOf(t, mid, "fire_once", 10*time.Second, 10*time.Second, cmdTS, cmd)
}

// adv41WatermarkCutWorldOf is adv41WatermarkCutWorld with j's misfire
// policy, how far behind the watermark its late put is (behind), and the
// pass's T after the watermark (jump).
func adv41WatermarkCutWorldOf(t *testing.T, mid bool, policy string, behind, jump time.Duration, cmdTS time.Time, cmd string) *partitionHarness {
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, adv41Base)
	h.advance(adv41Base)
	h.drain()
	h.command("a", adv41Base.Add(-behind-10*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"a":1}}}`)
	h.command("j", adv41Base.Add(-behind), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"`+policy+`","misfire_grace":"3s","payload":{"j":1}}}`)
	A := adv41Base.Add(jump)
	h.advance(A)
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(A), "the pass to A yielded: %+v", sh)
	require.Equal(t, "a", sh.PassKey)
	require.Empty(t, sh.Queued)
	if !mid {
		h.drain()
	}
	h.command("j", cmdTS, cmd)
	h.drain()
	h.advance(A.Add(time.Second))
	h.drain()
	return h
}

// TestAdversary41WatermarkCutSplitsFireOnceCatchUp: promise
// (docs/topics.md "Missed and misfire policies": fire_once sends "one, for
// the latest late time" per advance, with the others counted on it; an
// update first dispatches under the old definition what the job owes, as
// the advance under way would; the brief: no duplicate under another
// fire_id, missed counts consistent).
//
// With no advance waiting and one reference time for all of j's owed
// times (A), 8328245's passOf still cuts the plan at the watermark (end =
// earlier(until, watermark) for a due time behind it), so an update
// consumed between two callbacks of the pass plans j's catch-up in two
// pieces: two fire_once catch-up events, 10:00:00 (missed 9) and 10:00:06
// (missed 5), where the pass sends one, 10:00:06 (missed 15). Before
// 8328245 the update sent one, as the pass.
func TestAdversary41WatermarkCutSplitsFireOnceCatchUp(t *testing.T) {
	t.Parallel()
	upd := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_once","misfire_grace":"3s","payload":{"j":2}}}`
	ts := adv41Base.Add(10 * time.Second)
	ctrl := adv41Fires(t, adv41WatermarkCutWorld(t, false, ts, upd), "j")
	got := adv41Fires(t, adv41WatermarkCutWorld(t, true, ts, upd), "j")
	t.Logf("update after the pass:  %s", adv41String(ctrl))
	t.Logf("update during the pass: %s", adv41String(got))
	require.Equal(t, adv41Times(ctrl), adv41Times(got), "the update during the pass sent another set of j's times than the pass")
	require.Equal(t, adv41Missed(ctrl), adv41Missed(got), "missed counts")
}

// TestAdversary41WatermarkCutSkipMissedOnWrongFire: the same cut with
// misfire policy skip: the pass puts all 16 late times (09:59:51 ..
// 10:00:06) on its first on-time fire, 10:00:07 ("on the first non-late
// fire dispatched in the same advance: number of late fires"); the update
// during the pass puts 6 there, the other 10 only in the metric.
func TestAdversary41WatermarkCutSkipMissedOnWrongFire(t *testing.T) {
	t.Parallel()
	upd := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"3s","payload":{"j":2}}}`
	ts := adv41Base.Add(10 * time.Second)
	ctrl := adv41Fires(t, adv41WatermarkCutWorldOf(t, false, "skip", 10*time.Second, 10*time.Second, ts, upd), "j")
	got := adv41Fires(t, adv41WatermarkCutWorldOf(t, true, "skip", 10*time.Second, 10*time.Second, ts, upd), "j")
	t.Logf("update after the pass:  %s", adv41String(ctrl))
	t.Logf("update during the pass: %s", adv41String(got))
	require.Equal(t, adv41Times(ctrl), adv41Times(got))
	require.Equal(t, adv41Missed(ctrl), adv41Missed(got), "missed carried by the dispatched events")
}

// TestAdversary41WatermarkCutFireAllOverCatchUpBound: the same cut with
// fire_all: "each, up to 100 per job per advance (the latest 100; older
// ones are dropped)". j's late put is 200 s behind the watermark and the
// pass jumps 150 s: the pass sends the latest 100 late times (and the
// 4 on time); the update during the pass keeps 100 behind the watermark
// and 100 more after it: 200 late fires for one advance, 100 of them
// times the pass drops.
func TestAdversary41WatermarkCutFireAllOverCatchUpBound(t *testing.T) {
	t.Parallel()
	upd := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"3s","payload":{"j":2}}}`
	ts := adv41Base.Add(150 * time.Second)
	ctrl := adv41Fires(t, adv41WatermarkCutWorldOf(t, false, "fire_all", 200*time.Second, 150*time.Second, ts, upd), "j")
	got := adv41Fires(t, adv41WatermarkCutWorldOf(t, true, "fire_all", 200*time.Second, 150*time.Second, ts, upd), "j")
	old := func(fs []adv41Fire) (n int) {
		for _, f := range fs {
			if f.Payload == `{"j":1}` {
				n++
			}
		}
		return n
	}
	t.Logf("update after the pass: %d fires of j's first definition (first %s); during the pass: %d (first %s)",
		old(ctrl), ctrl[0].At.Format("15:04:05"), old(got), got[0].At.Format("15:04:05"))
	require.Equal(t, old(ctrl), old(got), "fires of j's first definition for the one advance")
	require.Equal(t, adv41Times(ctrl), adv41Times(got))
}
