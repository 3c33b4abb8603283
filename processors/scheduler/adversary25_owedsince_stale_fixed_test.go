package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Fixed by reverting owedSince (OwedAt is the shard's time again): these
// tests pass on the code before 417aeb4 and after the revert, and fail
// with it. Seed 190 x 800 (small chunks), the loss owedSince was for,
// is open again (docs/reliability.md).
//
// TestAdv25OwedSinceStaleContinuationLosesFires: promise (docs/topics.md,
// "What the scheduler does" and docs/reliability.md, guarantees): a fire is
// never lost; a late put owes the times of its schedule after its ts, and
// an advance that completes past them sends them (at least once).
//
// owedSince (417aeb4) writes OwedAt = T2 - 1ns for a record written while
// the shard's time is an advance T2 queued behind the pass under way (or
// waiting for its start loopback), on the premise that the pass to T2
// begins after the write from the start of the index, so once the
// watermark reaches T2 the job is handled through T2
// (codecs.JobRecord.owedThrough). That premise does not hold when the pass
// to T2 already began on the previous owner, whose callback crashed after
// its continuation reached the loopback topic but before its shard record
// reached the changelog (goka writes the two independently; the simulation
// keeps a prefix of each destination on a crash). The new owner's table
// says "T2 queued, not begun"; the start of the pass is consumed again
// (not committed) and begins the pass from the start, while the stale
// continuation, further along, completes it: entries between the two
// cursors that were not in the previous owner's index (the late put's) are
// never handled by any pass to T2, yet the watermark reaches T2 and the
// record, OwedAt < T2, now says the job was handled through T2. An index
// rebuilt from the table (a clean rebalance) then derives the job's entry
// after T2: its fires up to T2 are lost. With OwedAt = T2 (before
// 417aeb4) the record still owes them and the next advance sends them.
//
// Inputs (one partition): one-shot fillers h1-h3 (10:05-10:07) and g
// (10:12), e2 (10:16), e3 (10:18). Instance A (chunks of 2 jobs, 1 ns
// budget): advance 10:10 yields after h1,h2; advance 10:20 is queued; the
// pass to 10:10 completes (W=10:10, Queued=[10:20]) and loops back the
// start of the pass to 10:20. A consumes that start: it fires g and e2,
// writes Advancing=10:20 cursor e2, loops back the continuation "after
// e2" and crashes: the continuation is in Kafka, the shard write is not.
// Instance B (chunks of 1 job; a callback runs as many chunks as its
// wall-clock budget allows, so the count differs between deliveries)
// restores the table: put j (every 1m, fire_all, grace 168h) with ts
// 10:13 is consumed first (OwedAt = 10:19:59.999999999), then the start
// again (fires g, yields after g), then the stale continuation (after e2:
// fires e3, completes: W=10:20), then the redo's continuation (skipped).
// A clean rebalance, then advance 10:30.
//
// Expected: j@10:14:00 ... j@10:30:00 all dispatched. Got: j@10:14-10:20
// (7 fires) never dispatched. Severity: high (silent loss of scheduled
// fires), needs a crash between a pass's continuation and its shard write
// plus a late put or resume while an advance waits. Regression of 417aeb4:
// passes on 7ffa092 (OwedAt = 10:20 there; checked with git archive). The
// same OwedAt also makes passedThrough (decide_due.go) take j's entry,
// behind the stale continuation's cursor, for handled by the pass to 10:20
// while that pass is still under way, so a command on j there would skip
// the same fires without any rebalance.
func TestAdv25OwedSinceStaleContinuationLosesFires(t *testing.T) {
	t.Parallel()
	adv25StaleContinuation(t, adv25Rebalance)
}

// TestAdv25OwedSinceStaleContinuationSameStore is the history of
// TestAdv25OwedSinceStaleContinuationLosesFires without the rebalance: the
// next advance runs on B, whose index kept j's entry at 10:14. Expected
// (and got): j's fires from 10:14 on all go out (late), so the loss needs
// an index derived from the table after the pass to 10:20.
func TestAdv25OwedSinceStaleContinuationSameStore(t *testing.T) {
	t.Parallel()
	adv25StaleContinuation(t, adv25SameStore)
}

// TestAdv25OwedSinceCommandDuringStalePass: the history of
// TestAdv25OwedSinceStaleContinuationLosesFires with one more filler, e4
// (10:19), so that the stale continuation yields after e3 (cursor e3,
// 10:18) instead of completing, and then an update of j (put, payload K,
// ts 10:13:30) is consumed on B while the pass to 10:20 is under way. No
// rebalance, no rebuild: the same store throughout.
//
// passedThrough (decide_due.go) takes j's entry (10:14, behind the
// cursor) for handled by the pass to 10:20, since j's OwedAt
// (10:19:59.999999999, owedSince) is before Advancing: the update's
// catch-up (pastPass) skips 10:14-10:20 and the new definition starts
// after 10:20. Expected: j@10:14 ... j@10:30 all dispatched (10:14-10:20
// under payload J, the definition that owed them). Got: j@10:14-10:20 never
// dispatched. Severity: high (silent loss). Passes on 7ffa092 (OwedAt is
// Advancing there, so passedThrough declines).
func TestAdv25OwedSinceCommandDuringStalePass(t *testing.T) {
	t.Parallel()
	adv25StaleContinuation(t, adv25CommandDuringPass)
}

const (
	adv25SameStore = iota
	adv25Rebalance
	adv25CommandDuringPass
)

func adv25StaleContinuation(t *testing.T, mode int) {
	rebalance := mode == adv25Rebalance
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	T1, T2, T3 := at(10), at(20), at(30)
	prod := &recordingProducer{}

	// Instance A.
	a := &partitionHarness{t: t, prod: prod, now: base, chunk: 2, budget: time.Nanosecond}
	a.open()
	a.advance(base)
	a.drain()
	oneShot := func(h *partitionHarness, id string, m int) {
		h.command(id, base, fmt.Sprintf(`{"v":1,"op":"put","job":{"at":%q}}`, at(m).Format(time.RFC3339)))
	}
	for _, f := range []struct {
		id string
		m  int
	}{{"h1", 5}, {"h2", 6}, {"h3", 7}, {"g", 12}, {"e2", 16}, {"e3", 18}, {"e4", 19}} {
		if f.id == "e4" && mode != adv25CommandDuringPass {
			continue
		}
		oneShot(a, f.id, f.m)
	}
	a.drain()

	a.advance(T1) // fires h1, h2; yields
	require.Equal(t, T1, a.shard().Advancing, "the pass to 10:10 yields after its first chunk")
	a.now = T2
	a.deliver(a.s.onTrigger, a.s.cfg.Layout.ShardTriggers(), a.shardKey(), T2,
		codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T2}))
	require.Equal(t, []time.Time{T2}, a.shard().Queued, "10:20 waits for the pass under way")
	// The pass to 10:10 completes; its one-shot completions are delivered,
	// the start of the pass to 10:20 stays queued.
	a.deliverLoops(a.shardKey())
	for _, k := range []string{"h1", "h2", "h3"} {
		a.deliverLoops(k)
	}
	sh := a.shard()
	require.Equal(t, T1, sh.Watermark)
	require.True(t, sh.Advancing.IsZero())
	require.Equal(t, []time.Time{T2}, sh.Queued)
	require.Len(t, a.loops, 1, "only the start of the pass to 10:20 is left")
	start := a.loops[0]
	a.loops = nil

	// The changelog as it stands: what a new owner restores.
	keys := []string{a.shardKey(), "h1", "h2", "h3", "g", "e2", "e3", "e4"}
	table := map[string][]byte{}
	for _, k := range keys {
		v, err := a.st.Get(k)
		require.NoError(t, err)
		if v != nil {
			table[k] = append([]byte(nil), v...)
		}
	}

	// A consumes the start: fires g and e2 and yields after e2, then
	// crashes. Its continuation reached Kafka; its shard write did not.
	a.deliver(a.s.onLoop, a.s.cfg.Layout.SchedulerLoop(), start.Key, T2, start.Value)
	var stale *simOut
	for i := range a.loops {
		if a.loops[i].Key == a.shardKey() {
			stale = &a.loops[i]
		}
	}
	require.NotNil(t, stale, "A's callback looped back its continuation")
	tr, err := codecs.DecodeShardTrigger(stale.Value)
	require.NoError(t, err)
	require.Equal(t, "e2", tr.AfterKey, "A's continuation is after e2")
	staleMsg := stale.Value

	// Instance B restores the table from the changelog.
	b := &partitionHarness{t: t, prod: prod, now: T2, chunk: 1, budget: time.Nanosecond, off: a.off + 100}
	b.open()
	require.NoError(t, b.st.Set(b.shardKey(), table[b.shardKey()]))
	for _, k := range keys[1:] {
		if v, ok := table[k]; ok {
			require.NoError(t, b.st.Set(k, v))
		}
	}

	// A late put of j, consumed before the start is consumed again.
	b.command("j", at(13), `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"J"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	raw, err := b.st.Get("j")
	require.NoError(t, err)
	rec, err := codecs.DecodeJobRecord(raw)
	require.NoError(t, err)
	t.Logf("j's record after the put: through %s owedAt %s (T2 %s)", rec.Through.Format(time.RFC3339Nano), rec.OwedAt.Format(time.RFC3339Nano), T2.Format(time.RFC3339))

	// The start again (uncommitted on A): the pass to 10:20 from the start.
	b.deliver(b.s.onLoop, b.s.cfg.Layout.SchedulerLoop(), start.Key, T2, start.Value)
	// A's stale continuation (next on the loopback topic), then the redo's.
	b.deliver(b.s.onLoop, b.s.cfg.Layout.SchedulerLoop(), b.shardKey(), T2, staleMsg)
	if mode == adv25CommandDuringPass {
		sh := b.shard()
		require.Equal(t, T2, sh.Advancing, "the pass to 10:20 is under way")
		require.Equal(t, "e3", sh.PassKey, "its cursor is e3, past j's entry, which it never handled")
		b.command("j", at(13).Add(30*time.Second), `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"K"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	}
	b.drain()
	t.Logf("after the pass to 10:20 on B: watermark %s advancing %s", b.shard().Watermark.Format(time.RFC3339), b.shard().Advancing)

	// A clean rebalance: the next owner derives its index from the table.
	c := b
	if rebalance {
		c = &partitionHarness{t: t, prod: prod, now: T2, chunk: 1, budget: time.Nanosecond, off: b.off + 100}
		c.open()
		for _, k := range append(keys, "j") {
			v, err := b.st.Get(k)
			require.NoError(t, err)
			if v != nil {
				require.NoError(t, c.st.Set(k, v))
			}
		}
	}
	c.advance(T3)
	c.drain()

	fired := c.fired()
	var missing []string
	for m := 14; m <= 30; m++ {
		id := codecs.ScheduledFireID("j", at(m))
		if _, ok := fired[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("j, put at 10:13 (every 1m, fire_all, grace 168h), owes every minute from 10:14 through the advance to 10:30; %d never dispatched: %v", len(missing), missing)
	}
	c.requireOnePayload()
}
