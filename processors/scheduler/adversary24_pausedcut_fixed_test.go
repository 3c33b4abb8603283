package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv24PausedCutJobCrashLosesFires: promise (docs/reliability.md):
// every fire a job's schedule owes is dispatched at least once; a crash
// may repeat a fire, never lose one. A paused job still owes the fires it
// owed before its pause (decideDue: "due only for fires it owed before its
// pause").
//
// restoreCuts (rederive.go) restores a cut job's entry only for active
// jobs ("rec.Status != codecs.StatusActive: continue"). A job paused before
// the advance, owing fires from before its pause, is cut the same way
// (more fires than one plan takes), and its progress is recorded only by
// the settle the chunk sends: the same crash loses its remaining fires.
//
// Cuts are cheap with a small ChunkBytes (1 KiB, its minimum) and a ~200
// byte payload: a plan takes 2 fires (the same cut as the 10,000-fire
// bound). j every 1s, fire_all, grace 168h, put at 10:00:00 (watermark
// 10:00:00), paused at 10:00:15 (owes 10:00:01 .. 10:00:15). The advance
// to 10:00:20 (one chunk a callback, ChunkBudget 1ns) fires j@10:00:01 and
// 10:00:02, cuts it (entry to 10:00:03; cursor (10:00:01, j); PassCuts
// {j: 10:00:03}) and sends a settle and the continuation. The instance
// crashes before either is consumed; the new owner's store is restored
// from the changelog (j's record unsettled, due 10:00:01, at the cursor),
// the advance is delivered again and runs as a continuation from the
// cursor; restoreCuts skips j (paused) and the pass completes before j's
// settle is consumed.
//
// Expected: j@10:00:03 .. 10:00:15 go out (late at worst), as they do
// without the crash. Before restoreCuts handled paused jobs (3bee8cd and
// earlier): never (13 fires lost). Fixed the same day.
func TestAdv24PausedCutJobCrashLosesFires(t *testing.T) {
	t.Parallel()
	ctrl := adv24pRun(t, false)
	got := adv24pRun(t, true)
	require.Len(t, ctrl, 15, "without the crash: j@10:00:01 .. 10:00:15")
	miss := adv24Missing(ctrl, got)
	if len(miss) > 0 {
		t.Errorf("%d fires of the paused job owed before its pause never dispatched after the crash: %v", len(miss), miss)
	}
}

func adv24pRun(t *testing.T, crash bool) map[string][]string {
	base := adv24Base
	h := adv24Harness(t)
	h.command("j", base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+strings.Repeat("x", 200)+`"}}}`)
	h.drain()
	h.now = base.Add(15 * time.Second)
	h.command("j", h.now, `{"v":1,"op":"pause"}`)
	h.drain()
	T := base.Add(20 * time.Second)
	h.advance(T) // fires j@10:00:01, 10:00:02; cut; yields
	require.Len(t, h.prod.msgs, 2)
	require.Len(t, h.shard().PassCuts, 1)
	if crash {
		adv24Restore(h, "j")
		h.advance(T) // delivered again (its offset was not committed)
	}
	h.drain()
	for _, at := range []time.Time{T.Add(10 * time.Second), T.Add(11 * time.Second)} {
		h.advance(at)
		h.drain()
	}
	return h.fired()
}
