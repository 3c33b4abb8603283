package scheduler

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Adversary round 25b, against 9e709ba (passedThrough: a record with
// Through set and OwedAt not before the watermark is handled, behind the
// cursor, only through the cursor's time; restoreCuts on every inherited
// pass with a cursor).
//
// adv25bHistory: one partition, chunks of 2 jobs, one chunk a callback.
// Advance to 10:10 (W = 10:10). A late put of x (every 1m, fire_all,
// grace 168h, payload X1) with ts 10:05, at rest: Through 10:05, OwedAt
// 10:10 (= W), entry 10:06. One-shot fillers f15 (10:15), f17 (10:17),
// f18 (10:18). The advance to 10:20 handles x (10:06 .. 10:20, one plan:
// no cut) and f15 in its first callback and yields with cursor (10:15,
// f15): x's settle and the continuation are on the loopback topic. The
// partition then moves cleanly (no crash: every write of the callback is
// in the changelog) to an instance with an empty store, before x's settle
// is consumed. It returns the harness, after the move, and the keys.
func adv25bHistory(t *testing.T) (*partitionHarness, []string, time.Time) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: base, chunk: 2, budget: time.Nanosecond}
	h.open()
	h.advance(base)
	h.drain()
	h.advance(at(10))
	h.drain()
	keys := []string{"x", "f15", "f17", "f18"}
	h.command("x", at(5), `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"X1"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	for _, f := range []struct {
		id string
		m  int
	}{{"f15", 15}, {"f17", 17}, {"f18", 18}} {
		h.command(f.id, at(10), fmt.Sprintf(`{"v":1,"op":"put","job":{"at":%q}}`, at(f.m).Format(time.RFC3339)))
	}
	h.drain()
	raw, err := h.st.Get("x")
	require.NoError(t, err)
	rec, err := codecs.DecodeJobRecord(raw)
	require.NoError(t, err)
	require.False(t, rec.Through.IsZero(), "the late put owes fires behind the watermark")
	require.Equal(t, at(10), rec.OwedAt, "owed since the watermark")

	h.advance(at(20))
	sh := h.shard()
	require.Equal(t, at(20), sh.Advancing, "the pass to 10:20 yields after its first chunk")
	require.Equal(t, "f15", sh.PassKey)
	require.Equal(t, at(15), sh.PassAt)
	require.False(t, sh.PassCutsLost)
	require.Empty(t, sh.PassCuts, "x was handled through 10:20 in one plan")
	// A clean rebalance: the loopbacks (x's settle, the continuation) stay
	// in Kafka for the new owner.
	h.moveToEmptyStore(keys...)
	return h, keys, at(20)
}

// adv25bDups is every fire_id h dispatched more than once, sorted.
func adv25bDups(h *partitionHarness) []string {
	var dup []string
	for id, ps := range h.fired() {
		if len(ps) > 1 {
			dup = append(dup, id)
		}
	}
	sort.Strings(dup)
	return dup
}

// TestAdv25bCommandBeforeSettleRepeatsAfterCleanRebalance: promise
// (docs/reliability.md, "A clean rebalance in the middle of an advance":
// duplicates only after a crash; a clean rebalance mid-advance repeats
// nothing).
//
// adv25bHistory, then on the new owner an update of x (put, payload X2,
// ts 10:16) is consumed from chronos-jobs before x's settle (a different
// topic: nothing orders them). The update first dispatches what x still
// owes under X1 (handled/pastPass). The new owner's index, derived from
// the table, has x at 10:06, behind the cursor; x's record has Through
// and OwedAt = W, so 9e709ba's passedThrough says x was handled only
// through the cursor's time (10:14:59.999...) instead of through the
// pass's T (10:20), and the update's catch-up sends x@10:15 .. x@10:20
// again, though the previous owner's pass sent them (x's settle, still
// queued, says so) and nothing crashed.
//
// Expected: no fire_id twice (as before 9e709ba, where passedThrough
// answers 10:20). Got: x@10:15:00 .. x@10:20:00 (6 fires) sent twice,
// same payload X1. Severity: low-medium (same payload, consumers dedupe on
// fire_id) but a regression of a documented property, with no crash; a
// job with a fine schedule (every 1s) repeats every time between the
// cursor's time and T.
func TestAdv25bCommandBeforeSettleRepeatsAfterCleanRebalance(t *testing.T) {
	t.Parallel()
	h, _, T := adv25bHistory(t)
	h.command("x", T.Add(-4*time.Minute), `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"X2"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.drain()
	h.advance(T.Add(5 * time.Minute))
	h.drain()
	h.requireOnePayload()
	if dup := adv25bDups(h); len(dup) > 0 {
		t.Errorf("after a clean rebalance (no crash), %d fire_ids went out twice: %v", len(dup), dup)
	}
}

// TestAdv25bCleanRebalanceAllSettlesConsumed: adv25bHistory with the
// loopbacks consumed in order on the new owner (x's settle before the
// continuation, whose restoreCuts now runs on every inherited pass).
// Expected and (checked) got: nothing twice; the settle clears x's
// Through before restoreCuts reads it.
func TestAdv25bCleanRebalanceAllSettlesConsumed(t *testing.T) {
	t.Parallel()
	h, _, T := adv25bHistory(t)
	h.drain()
	h.advance(T.Add(5 * time.Minute))
	h.drain()
	h.requireOnePayload()
	if dup := adv25bDups(h); len(dup) > 0 {
		t.Errorf("after a clean rebalance (no crash), %d fire_ids went out twice: %v", len(dup), dup)
	}
}
