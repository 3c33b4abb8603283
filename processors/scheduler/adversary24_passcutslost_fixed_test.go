package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAdv24CutsLostCrashLosesFires: promise (docs/reliability.md): every
// fire a job's schedule owes is dispatched at least once; a crash may
// repeat a fire, never lose one.
//
// restoreCuts (rederive.go) puts a cut job's entry back where the pass left
// it, read from ShardRecord.PassCuts. When more than codecs.MaxPassCuts (64)
// jobs are cut and not yet handled again, passYield drops the list and sets
// PassCutsLost: restoreCuts then has nothing to restore, and the bug it
// fixes (seeds 700077/700096) is back, with no command involved.
//
// A cut is any plan stopped at its per-advance bound: the 10,000-fire bound,
// or the chunk's event bytes (bytesLeft/est in decideDue). Here ChunkBytes
// is 1 KiB (its minimum) and payloads ~220 bytes, so a plan takes 2 fires
// (with the default 8 MiB and 64 KiB payloads it is ~127 fires; with small
// payloads 10,000): 70 jobs every 1s, fire_all, grace 168h, put at 10:00:00,
// advance to 10:00:20: each owes 20 fires.
//
// Every chunk is a callback (ChunkBudget 1ns); each cuts one job after 2
// fires (its entry moves to 10:00:03, after the cursor (10:00:01, jNNN)) and
// sends a settle. Loopbacks are consumed in order, so every settle but the
// last is applied. After the callback that cut j064 (the 65th cut: the
// yield records PassCutsLost, PassAt 10:00:01, PassKey j064) the instance
// crashes before its settle and continuation are consumed. The new owner's
// store is restored from the changelog (j064's record unsettled: due at
// 10:00:01, at the cursor); the advance is delivered again and runs as a
// continuation from the cursor; the new owner's callback completes the pass
// within its budget (1h here) before j064's settle is consumed.
//
// Expected: j064@10:00:03 .. 10:00:20 go out (late at worst). Got: they
// never go out (18 fires lost) on 3bee8cd, as before restoreCuts; fixed the
// same day (restoreCuts, PassCutsLost: every entry behind the cursor).
// With 10 cut jobs (PassCuts kept) the same history loses nothing now.
// (TestAdv24CutsLostCleanRebalanceRepeats, open, is what that fix costs on
// a clean rebalance.)
func TestAdv24CutsLostCrashLosesFires(t *testing.T) {
	t.Parallel()
	const jobs, cutsAtCrash = 70, 65
	ctrl := adv24cRun(t, jobs, 0)
	got := adv24cRun(t, jobs, cutsAtCrash)
	miss := adv24Missing(ctrl, got)
	if len(miss) > 0 {
		t.Errorf("%d fires owed by the advance to 10:00:20 never dispatched after the crash: %s .. %s", len(miss), miss[0], miss[len(miss)-1])
	}
}

// adv24cRun runs the history; cutsAtCrash 0: no crash (the control).
func adv24cRun(t *testing.T, jobs, cutsAtCrash int) map[string][]string {
	base := adv24Base
	h := adv24Harness(t)
	pay := strings.Repeat("x", 200)
	var keys []string
	for i := range jobs {
		k := fmt.Sprintf("j%03d", i)
		keys = append(keys, k)
		h.command(k, base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+pay+`"}}}`)
	}
	h.drain()
	T := base.Add(20 * time.Second)
	h.advance(T)
	for len(h.loops) > 0 {
		sh := h.shard()
		if cutsAtCrash > 0 && sh.PassCutsLost && h.loops[0].Key != h.shardKey() {
			// Crash after the callback that cut the 65th job: its settle
			// and continuation are not consumed. The new owner restores
			// the table from the changelog, and completes the pass in one
			// callback, before the 65th job's settle is consumed.
			h.budget = time.Hour
			adv24Restore(h, keys...)
			h.advance(T) // delivered again (its offset was not committed)
			break
		}
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
	}
	h.drain()
	for _, at := range []time.Time{T.Add(10 * time.Second), T.Add(11 * time.Second)} {
		h.advance(at)
		h.drain()
	}
	return h.fired()
}
