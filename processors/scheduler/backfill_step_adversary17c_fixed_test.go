package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv17cRun delivers msg to cb on topic for key, queues its loopbacks and
// returns the backfill steps it emitted (held by the test: the backfill
// topic is another topic than the loopback and the shard triggers).
func (h *partitionHarness) adv17cRun(cb func(goka.Context, any), topic string, key string, ts time.Time, msg []byte) []simOut {
	h.t.Helper()
	h.off++
	ctx := &simCtx{topic: goka.Stream(topic), key: key, table: h.st, ts: ts, offset: h.off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(cb, msg))
	var steps []simOut
	for _, o := range ctx.outs {
		switch {
		case o.Kind == simOutLoop:
			h.loops = append(h.loops, o)
		case o.Kind == simOutEmit && o.Topic == string(h.s.cfg.Layout.SchedulerBackfill()):
			steps = append(steps, o)
		}
	}
	return steps
}

// adv17cAdvance delivers an advance to t and returns the backfill steps its
// first callback emitted.
func (h *partitionHarness) adv17cAdvance(t time.Time) []simOut {
	h.now = t
	return h.adv17cRun(h.s.onTrigger, string(h.s.cfg.Layout.ShardTriggers()), h.shardKey(), t,
		codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t}))
}

// adv17cDrain drains the loopbacks (oldest first) and returns the backfill
// steps they emitted.
func (h *partitionHarness) adv17cDrain() []simOut {
	var steps []simOut
	for len(h.loops) > 0 {
		l := h.loops[0]
		h.loops = h.loops[1:]
		steps = append(steps, h.adv17cRun(h.s.onLoop, string(h.s.cfg.Layout.SchedulerLoop()), l.Key, h.now, l.Value)...)
	}
	return steps
}

// adv17cShardLoops delivers the shard key's queued loopbacks (one round)
// and returns the backfill steps they emitted.
func (h *partitionHarness) adv17cShardLoops() []simOut {
	var mine, rest, steps []simOut
	for _, l := range h.loops {
		if l.Key == h.shardKey() {
			mine = append(mine, l)
		} else {
			rest = append(rest, l)
		}
	}
	h.loops = rest
	for _, l := range mine {
		steps = append(steps, h.adv17cRun(h.s.onLoop, string(h.s.cfg.Layout.SchedulerLoop()), l.Key, h.now, l.Value)...)
	}
	return steps
}

// adv17cStep delivers held backfill steps and returns the ones they emit.
func (h *partitionHarness) adv17cStep(steps []simOut) []simOut {
	var out []simOut
	for _, s := range steps {
		out = append(out, h.adv17cRun(h.s.onBackfill, string(h.s.cfg.Layout.SchedulerBackfill()), s.Key, h.now, s.Value)...)
	}
	return out
}

// TestAdv17cBackfillStepMidAdvanceRepeatsAFire: promises (docs/topics.md,
// "Delivery guarantees": a fire repeats only after a crash, a failed
// produce or a lost store write; "Backfill": the backfill runs beside the
// schedule).
//
// A backfill step (stepBackfill) writes a copy of the job's record with
// the backfill's progress — the same kind of record copy keepEntry now
// guards for backfill/cancel_backfill commands (6c1270b), but the step is
// not guarded. Steps come on their own topic (the group's backfill topic,
// emitted when an advance completes), so a step of the advance to T1 can be
// consumed between the callbacks of the advance to T2 after that pass
// fired the job: the copy re-derives the job's entry from its record at the
// watermark T1, i.e. back on T2, a time already sent, and the next
// advance sends it again.
//
// Inputs: jobs j, k, l every 1s; chunk 1, budget 1ns; k has a backfill of
// [11:00:00, 11:00:30) in progress. The advance to 12:00:01 completes (its
// step for k is held). The advance to 12:00:02 fires j and k in its first
// callbacks and yields; the held step of k is consumed then (all 30
// backfill fires, the backfill done: the record copy without it). The
// advance finishes; advances to 12:00:03..12:00:05 follow. No crash, no
// command between the advances.
//
// Expected: every scheduled fire_id once. Got: k@12:00:02 dispatched twice
// (scheduled, not backfill). Severity: duplicate without a crash.
func TestAdv17cBackfillStepMidAdvanceRepeatsAFire(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, t0)
	h.adv17cAdvance(t0)
	h.adv17cDrain()
	for _, id := range []string{"j", "k", "l"} {
		h.command(id, t0, `{"v":1,"op":"put","job":{"every":"1s","payload":{"id":"`+id+`"}}}`)
		h.adv17cDrain()
	}
	h.command("k", t0, `{"v":1,"op":"backfill","from":"2026-03-01T11:00:00Z","to":"2026-03-01T11:00:30Z"}`)
	h.adv17cDrain()
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	held := h.adv17cAdvance(t1)
	held = append(held, h.adv17cDrain()...)
	require.True(t, h.shard().Watermark.Equal(t1))
	require.NotEmpty(t, held, "the advance to 12:00:01 sent k a backfill step")
	// The advance to 12:00:02: j, then k, then it yields.
	pending := h.adv17cAdvance(t2)
	pending = append(pending, h.adv17cShardLoops()...)
	require.Len(t, h.fired()["k@2026-03-01T12:00:02Z"], 1, "k@12:00:02 fired before the step")
	require.False(t, h.shard().Advancing.IsZero(), "the advance to 12:00:02 is under way")
	pending = append(pending, h.adv17cStep(held)...)
	require.Equal(t, 30, h.adv17Backfilled("k"), "the step dispatched the whole backfill")
	require.Nil(t, h.adv17Record("k").Backfill, "the backfill is done")
	pending = append(pending, h.adv17cDrain()...)
	for i := 3; i <= 5; i++ {
		pending = h.adv17cStep(pending) // none: the backfill is done
		pending = append(pending, h.adv17cDrain()...)
		pending = append(pending, h.adv17cAdvance(t0.Add(time.Duration(i)*time.Second))...)
		pending = append(pending, h.adv17cDrain()...)
	}
	counts := map[string]int{}
	for _, m := range h.prod.msgs {
		d, err := codecs.DecodeDispatch(m.Value)
		require.NoError(t, err)
		if !d.Backfill {
			counts[d.FireID]++
		}
	}
	for id, n := range counts {
		if n > 1 {
			t.Errorf("%s dispatched %d times without any crash (a backfill step between the advance's callbacks)", id, n)
		}
	}
	for i := 1; i <= 5; i++ {
		for _, id := range []string{"j", "k", "l"} {
			if fid := id + "@" + t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339); counts[fid] == 0 {
				t.Errorf("%s never dispatched", fid)
			}
		}
	}
}
