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

// TestAdv25bPausedPutTwoPayloadsAfterCleanRebalance: promise
// (docs/topics.md, docs/reliability.md): a fire_id never goes out with two
// payloads (and a clean rebalance mid-advance repeats nothing).
//
// Inputs (one partition, chunks of 2 jobs, one chunk a callback): p, every
// 1m, no jitter, payload P1, put at 10:00; advance to 10:10 (W = 10:10: p
// handled through 10:10). A pause of p with ts 10:18 consumed at rest:
// paused, Through 10:10, NotBefore 10:18, OwedAt 10:10 (= W): p owes
// 10:11 .. 10:18, from before its pause. One-shot fillers f15 (10:15),
// f17, f18. The advance to 10:20 handles p (10:11 .. 10:18 under P1, one
// plan, no cut) and f15 in its first callback, then yields (cursor
// 10:15/f15); p's settle and the continuation are queued. The partition
// moves cleanly to an instance with an empty store (no crash). There a
// put of p (same schedule, jitter 10s, payload P2, ts 10:19) is consumed
// from chronos-jobs before p's settle (another topic: nothing orders
// them).
//
// The put asks how far the paused p was handled (pausedHandled ->
// pastPass -> passedThrough). p's derived entry (10:11) is behind the
// cursor and its record has Through and OwedAt = W, so 9e709ba's rule says
// handled only through the cursor's time (10:14:59.999...), not through
// the pass's T (before 9e709ba: 10:20, past the pause, so "all it owed
// went out", handled through 10:18). p then still "owes" 10:15 .. 10:18
// from before its pause, so the update continues from there (putRecord: a
// paused job that owes fires before its pause continues from Handled;
// rebase for the new jitter): p v5 owes scheduled times 10:15 .. under
// P2. p's settle (T 10:18, jitter 0) would have raised the record past
// them (sentRecord; without the jitter change it does, and nothing
// breaks), but a settle of another jitter is stale, so the continuation
// sends p@10:15 .. p@10:18 under P2 -- the previous owner's pass already
// sent them under P1.
//
// Expected: every fire_id with one payload (as on b6c96f1, checked with
// git archive: passes there). Got: p@10:15:00 .. p@10:18:00 (4 fire_ids)
// each sent with P1 and then P2. Severity: high (a fire_id with two
// payloads; no crash needed, only a clean rebalance mid-advance, and a
// put that changes payload and jitter consumed before the settle).
func TestAdv25bPausedPutTwoPayloadsAfterCleanRebalance(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: base, chunk: 2, budget: time.Nanosecond}
	h.open()
	h.advance(base)
	h.drain()
	h.command("p", base, `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"P1"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.drain()
	h.advance(at(10))
	h.drain()
	keys := []string{"p", "f15", "f17", "f18"}
	for _, f := range []struct {
		id string
		m  int
	}{{"f15", 15}, {"f17", 17}, {"f18", 18}} {
		h.command(f.id, at(10), fmt.Sprintf(`{"v":1,"op":"put","job":{"at":%q}}`, at(f.m).Format(time.RFC3339)))
	}
	h.command("p", at(18), `{"v":1,"op":"pause"}`)
	h.drain()
	raw, err := h.st.Get("p")
	require.NoError(t, err)
	rec, err := codecs.DecodeJobRecord(raw)
	require.NoError(t, err)
	require.Equal(t, codecs.StatusPaused, rec.Status)
	require.False(t, rec.Through.IsZero(), "the paused job owes fires before its pause")
	require.Equal(t, at(10), rec.OwedAt)
	t.Logf("p paused: through %s notBefore %s owedAt %s", rec.Through.Format(time.RFC3339Nano), rec.NotBefore.Format(time.RFC3339), rec.OwedAt.Format(time.RFC3339))

	h.advance(at(20))
	sh := h.shard()
	require.Equal(t, at(20), sh.Advancing, "the pass to 10:20 yields after its first chunk")
	require.Equal(t, "f15", sh.PassKey)
	require.Empty(t, sh.PassCuts)
	require.False(t, sh.PassCutsLost)
	for m := 11; m <= 18; m++ {
		require.Contains(t, h.fired(), codecs.ScheduledFireID("p", at(m)), "the old owner's pass sent p's owed times under P1")
	}

	// A clean rebalance; the put is consumed before p's settle.
	h.moveToEmptyStore(keys...)
	h.command("p", at(19), `{"v":1,"op":"put","job":{"every":"1m","jitter":"10s","payload":{"p":"P2"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	if raw, err := h.st.Get("p"); err == nil {
		if r, err := codecs.DecodeJobRecord(raw); err == nil {
			t.Logf("p after the put: %s v%d through %s notBefore %s owedAt %s", r.Status, r.Version, r.Through.Format(time.RFC3339Nano), r.NotBefore.Format(time.RFC3339Nano), r.OwedAt.Format(time.RFC3339))
		}
	}
	h.drain()
	h.advance(at(25))
	h.drain()

	var two []string
	for id, ps := range h.fired() {
		for _, p := range ps[1:] {
			if p != ps[0] {
				two = append(two, id+" "+strings.Join(ps, " / "))
				break
			}
		}
	}
	sort.Strings(two)
	if len(two) > 0 {
		t.Errorf("after a clean rebalance (no crash), %d fire_ids went out with two payloads: %v", len(two), two)
	}
}
