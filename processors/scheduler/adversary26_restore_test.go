package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Adversary round 26, against d70f193 (restore's early skip and single
// schedule read, 399f961; restoredThrough, d43663a).
//
// Each variant starts from adv25bHistory (a late job x, Through set and
// OwedAt = W = 10:10, handled through 10:20 in the first callback of the
// pass to 10:20, which yields at cursor (10:15, f15); a clean rebalance
// to an empty store before x's settle and the continuation are
// consumed), then orders the new owner's inputs differently. A clean
// rebalance repeats nothing and loses nothing (docs/reliability.md,
// docs/topics.md "Updates, deletes and versions"): every x@10:06 ..
// x@<end> goes out exactly once, with one payload.

// adv26CheckX fails for every x fire_id from 10:06 through end that did not
// go out exactly once, and for every fire_id with two payloads.
func adv26CheckX(t *testing.T, h *partitionHarness, end time.Time) {
	t.Helper()
	h.requireOnePayload()
	fired := h.fired()
	base := time.Date(2026, 3, 1, 10, 6, 0, 0, time.UTC)
	var lost, twice []string
	for at := base; !at.After(end); at = at.Add(time.Minute) {
		id := "x@" + at.Format(time.RFC3339)
		switch n := len(fired[id]); {
		case n == 0:
			lost = append(lost, id)
		case n > 1:
			twice = append(twice, fmt.Sprintf("%s x%d", id, n))
		}
	}
	if len(lost) > 0 {
		t.Errorf("clean rebalance: %d x fire_ids never dispatched: %v", len(lost), lost)
	}
	if len(twice) > 0 {
		t.Errorf("clean rebalance (no crash): %d x fire_ids dispatched more than once: %v", len(twice), twice)
	}
}

// TestAdv26InputsBeforeSettle orders the new owner's inputs before x's
// settle in three ways; each step is x's command with its record time,
// or (no command) an advance to that time, followed by every loopback
// queued.
func TestAdv26InputsBeforeSettle(t *testing.T) {
	t.Parallel()
	type step struct {
		min int // minutes after the pass's T (10:20)
		cmd string
	}
	for _, tc := range []struct {
		name, what string
		steps      []step
	}{
		{"QueuedAdvanceBeforeSettle", "an advance trigger (10:25) consumed on the new owner before the loopbacks waits (Queued), so x's settle reads the shard's time as 10:25 and keeps Through (10:20) and OwedAt (10:10)",
			[]step{{5, ""}, {10, ""}}},
		{"PauseBeforeSettleThenResume", "a pause of x (ts 10:22, after the pass's T) before x's settle, then the loopbacks, a resume with ts 10:22 (x owes after 10:22 again; 10:06 .. 10:22 are due before the pause) and advances",
			[]step{{2, `{"v":1,"op":"pause"}`}, {5, ""}, {2, `{"v":1,"op":"resume"}`}, {10, ""}}},
		{"LatePauseBeforeSettleThenPut", "a late pause (ts 10:12, behind the cursor's time) before x's settle: x still owes nothing up to 10:12 (the pass sent 10:06 .. 10:20); then the loopbacks, a put (payload X2) and advances",
			[]step{{-8, `{"v":1,"op":"pause"}`}, {-8, `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"X2"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`}, {5, ""}, {10, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t.Log(tc.what)
			h, _, T := adv25bHistory(t)
			for _, st := range tc.steps {
				ts := T.Add(time.Duration(st.min) * time.Minute)
				if st.cmd == "" {
					h.advance(ts)
				} else {
					h.command("x", ts, st.cmd)
				}
				h.drain()
			}
			adv26CheckX(t, h, T.Add(10*time.Minute))
		})
	}
}

// A second clean rebalance after the continuation's restoreCuts, before
// the pass completes (another chunk to go), then the rest.
func TestAdv26TwoCleanRebalances(t *testing.T) {
	t.Parallel()
	h, keys, T := adv25bHistory(t)
	require.NotEmpty(t, h.loops)
	// x's settle and the continuation.
	for len(h.loops) > 0 {
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
		if h.shard().Advancing.Equal(T) && len(h.loops) > 0 {
			h.moveToEmptyStore(keys...)
		}
	}
	h.advance(T.Add(10 * time.Minute))
	h.drain()
	adv26CheckX(t, h, T.Add(10*time.Minute))
}
