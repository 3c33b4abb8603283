package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Fixed by reverting the yield after a failed produce: a callback whose
// produce fails fails again, and its input is delivered again. This test
// passes on the code before 0abc477 and after the revert, and fails with
// the yield.
//
// TestAdv25YieldAfterAmbiguousProduceThenPutTwoPayloads: promise
// (docs/topics.md, dispatch events and "Repeats after a crash";
// docs/reliability.md guarantees): at least once, and a fire_id that goes
// out again carries the same payload; a fire_id never goes out with two
// payloads.
//
// Change 2 of round 25 (0abc477): an advance whose produce fails after
// acknowledged chunks no longer fails its callback; it yields (commits),
// and the failed chunk is sent again by the continuation, after whatever
// the partition consumes in between. A failed produce may have been
// acknowledged in part (the simulation's producer acknowledges a prefix
// and fails; so does a broker timeout after the write). The index and the
// record still say those fires are owed. A put consumed in between on a
// paused job that still owes fires from before its pause takes those times
// over under its new definition (docs/topics.md: "then those, and the
// paused interval with them"), so the continuation sends a fire_id the
// failed produce had already delivered, now with the put's payload.
// Before 0abc477 the callback failed, the partition restarted and the same
// input was delivered again first (the simulation's model), sending the
// chunk again under the old payload before the put was consumed.
//
// Inputs: 1 KiB chunks, budget 1h (many chunks a callback). Shard at
// 10:00; put p (every 1m, payload A ~200 bytes); pause p with ts 10:30
// (ahead of the shard: p still owes 10:01-10:30 from before its pause).
// The advance to 10:30 sends p's fires ~2 a chunk; the third chunk's
// produce acknowledges its first event (p@10:05) and fails. Then put p
// (payload B, ts 10:31), then the loopbacks.
//
// Expected: p@10:01-10:30 all dispatched, each fire_id with one payload
// (p@10:05 with A). Got: p@10:05 with A (the acknowledged prefix) and then
// with B. Passes on 7ffa092 (the callback fails and is delivered again
// before the put). Severity: high (the fire_id
// contract), needs one ambiguous produce failure in an advance callback
// with earlier chunks acknowledged, and a put on a paused job owing
// pre-pause fires before the continuation. Found from simulation seed
// 2700042 x 1500 (-sim.crashkeep; no crash or rebalance needed, producer
// errors 3%), which fails so (3 two-payload violations, j3@10:34:21);
// on 7ffa092 that seed was stuck instead.
func TestAdv25YieldAfterAmbiguousProduceThenPutTwoPayloads(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rec := &recordingProducer{}
	prod := &adv25FlakyProducer{rec: rec, fail: map[int]bool{}, keep: 1}
	h := &partitionHarness{t: t, prod: rec, now: base, chunk: 25000, budget: time.Hour}
	h.s, h.st = openPartition(t, Config{ChunkSize: h.chunk, ChunkBudget: h.budget, ChunkBytes: 1 << 10, Producer: prod,
		Now: func() time.Time { return h.now }})
	h.advance(base)
	h.drain()
	pad := strings.Repeat("x", 180)
	h.command("p", base, `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"A","pad":"`+pad+`"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.command("p", base.Add(30*time.Minute), `{"v":1,"op":"pause"}`)
	h.drain()

	// The advance to 10:30: its third produce acknowledges one event and fails.
	T := base.Add(30 * time.Minute)
	h.now = T
	first := prod.calls + 1
	prod.fail[prod.calls+3] = true
	h.off++
	ctx := &simCtx{topic: h.s.cfg.Layout.ShardTriggers(), key: h.shardKey(), table: h.st, ts: T, offset: h.off, ctx: context.Background()}
	err := ctx.run(h.s.onTrigger, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: T}))
	require.Greater(t, prod.calls, first+1, "the callback reached its third produce")
	var ambiguous string
	for id := range h.fired() {
		if strings.HasPrefix(id, "p@") && id > ambiguous {
			ambiguous = id
		}
	}
	t.Logf("advance callback: err %v; last p fire delivered: %s", err, ambiguous)
	if err != nil {
		// The code before 0abc477: the callback fails, the partition
		// restarts and the input is delivered again (the producer works).
		require.ErrorContains(t, err, "transient")
		h.advance(T)
	} else {
		for _, o := range ctx.outs {
			if o.Kind == simOutLoop {
				h.loops = append(h.loops, o)
			}
		}
	}
	// A put on the paused job, consumed before the rest of the loopbacks.
	h.command("p", T.Add(time.Minute), `{"v":1,"op":"put","job":{"every":"1m","payload":{"p":"B"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.drain()
	h.advance(T.Add(5 * time.Minute))
	h.drain()

	fired := h.fired()
	// 10:01-10:30 were owed before the pause: they go out (under A, or B
	// once the put took them over, never both for one fire_id).
	for m := 1; m <= 30; m++ {
		id := codecs.ScheduledFireID("p", base.Add(time.Duration(m)*time.Minute))
		if _, ok := fired[id]; !ok {
			t.Errorf("%s never dispatched", id)
		}
	}
	for id, ps := range fired {
		for _, pl := range ps[1:] {
			if pl != ps[0] {
				t.Errorf("fire_id %s dispatched with two payloads: %q then %q", id, short(ps[0]), short(pl))
				break
			}
		}
	}
}

func short(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}
