package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv41FlakyProducer acknowledges every produce call but each every-th,
// which acknowledges the first half of its events and fails (a broker
// fault now and then, as the simulation's producefail draws them).
type adv41FlakyProducer struct {
	inner *recordingProducer
	every int
	calls int
	fail  bool // failures on
}

var errAdv41Produce = errors.New("adv41: injected producer error")

func (p *adv41FlakyProducer) ProduceSync(ctx context.Context, topic string, msgs []Msg) error {
	p.calls++
	if p.fail && p.every > 0 && p.calls%p.every == 0 {
		_ = p.inner.ProduceSync(ctx, topic, msgs[:len(msgs)/2])
		return errAdv41Produce
	}
	return p.inner.ProduceSync(ctx, topic, msgs)
}

// adv41FlakyHarness is newPartitionHarnessBudget (chunk 1, 1ns budget) with
// a producer that fails every every-th call once fail is set.
func adv41FlakyHarness(t *testing.T, every int) (*partitionHarness, *adv41FlakyProducer) {
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: adv41Base, chunk: 1, budget: time.Nanosecond}
	fp := &adv41FlakyProducer{inner: h.prod, every: every}
	h.s, h.st = openPartition(t, Config{ChunkSize: 1, ChunkBudget: time.Nanosecond, Producer: fp, Now: func() time.Time { return h.now }})
	return h, fp
}

// adv41TryCommand delivers a command once and returns its error (the
// partition would restart and consume it again); its loopbacks are kept
// only when it succeeds.
func adv41TryCommand(h *partitionHarness, id string, ts time.Time, js string) error {
	h.off++
	ctx := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: id, table: h.st, ts: ts, offset: h.off, ctx: context.Background()}
	err := ctx.run(h.s.onCommand, []byte(js))
	if err == nil {
		for _, o := range ctx.outs {
			if o.Kind == simOutLoop {
				h.loops = append(h.loops, o)
			}
		}
	}
	return err
}

// TestAdversary41SegmentsKeepNoProgressAcrossFailedProduces (failed on
// 4cfa8d3; passed on 8328245~1, where the update is one produce; fixed:
// the segments go out together, and the record is settled after each
// batch): promise
// (docs/reliability.md: a failed produce repeats fires, "never" stops a
// processor; the scheduler's own comment in sendOwed: "the record learns
// how far they went, as a settle would, so that the command consumed again
// after a failed produce resumes here ... one that needs hundreds of
// batches never completed (simulation seed 15 x 800 with
// -sim.smallchunks)"): a command whose owed fires need many produces
// completes under occasional producer faults.
//
// 8328245 cuts sendOwed's plan at every advance waiting in Queued and
// continues without writing the job's progress (the `continue` before
// settledRecord). A job every 1s owing the times of 60 queued advances
// (a pass slow to continue: a backlog of advances consumed ahead of it, a
// new owner after an outage) now needs 61 produces in one delivery of its
// update, where it needed one before; a produce failing once in 20 makes
// every delivery start again from the first, and the update never
// applies: the partition restarts forever on it.
func TestAdversary41SegmentsKeepNoProgressAcrossFailedProduces(t *testing.T) {
	t.Parallel()
	h, fp := adv41FlakyHarness(t, 20)
	h.advance(adv41Base)
	h.drain()
	put := func(payload int) string {
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":%d}}}`, payload)
	}
	h.command("a", adv41Base, put(0))
	h.command("j", adv41Base, put(1))
	T1 := adv41Base.Add(time.Second)
	h.advance(T1) // fires a@10:00:01 and yields: j is after the cursor
	require.Len(t, h.loops, 1)
	const n = 60
	for i := 2; i <= n+1; i++ {
		h.advance(adv41Base.Add(time.Duration(i) * time.Second))
	}
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(T1))
	t.Logf("queued %d advances (continuation resends: %d loops)", len(sh.Queued), len(h.loops))

	fp.fail, fp.calls = true, 0
	ts := adv41Base.Add(time.Duration(n+1) * time.Second)
	deliveries := 0
	for ; deliveries < 50; deliveries++ {
		before := fp.calls
		err := adv41TryCommand(h, "j", ts, put(2))
		if err == nil {
			t.Logf("the update applied on delivery %d (%d produces in it)", deliveries+1, fp.calls-before)
			break
		}
		require.ErrorIs(t, err, errAdv41Produce)
		if deliveries == 0 {
			t.Logf("delivery 1 failed after %d produces: %v", fp.calls-before, err)
		}
	}
	require.Less(t, deliveries, 50, "the update never applied: every delivery started again from j's first owed time (%d produce calls)", fp.calls)
}
