package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// hdrCtx is a simCtx whose record carries headers (a bulk command's MAC).
type hdrCtx struct {
	*simCtx
	h goka.Headers
}

func (c *hdrCtx) Headers() goka.Headers { return c.h }

// deliverCommandWithHeaders delivers a chronos-jobs record with headers
// and queues the loopbacks it produced.
func (h *partitionHarness) deliverCommandWithHeaders(m Msg, ts time.Time) {
	h.t.Helper()
	h.off++
	sc := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: m.Key, table: h.st, ts: ts, offset: h.off, ctx: context.Background()}
	c := &hdrCtx{simCtx: sc, h: goka.Headers(m.Headers)}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(simFailure); !ok {
					panic(r)
				}
				h.t.Fatalf("command failed: %v", r)
			}
		}()
		h.s.onCommand(c, m.Value)
	}()
	for _, o := range sc.outs {
		if o.Kind == simOutLoop {
			h.loops = append(h.loops, o)
		}
	}
}

// TestAdv16BulkRepeatOfAResumeCountsSkipped: promise (docs/topics.md, bulk
// operations, "Crashes, rebalances, repeats"): "A job whose command was
// written but not yet applied may get it twice ...; the second changes
// nothing and is not counted in `skipped`".
//
// A bulk resume of bucket b (one paused one-shot job x, due 10:05). Its
// chunk's command resume(if_version v) is acknowledged; the process dies
// before the table records the step (the table write is lost: the order
// dcdde19 chose, "a crash ... repeats at most that chunk"), so the
// redelivered continuation runs the chunk again and writes resume(v) a
// second time (the first is not applied yet). The first copy resumes x
// (version v+1); the next advance fires x@10:05 and x completes (still
// version v+1, completed). The second copy then conflicts only because
// the first was applied, but bulkRepeat wants the job "active" for a
// resume: the repeat is counted as a loss to a newer version (skipped 1).
// (Any resumed job that completes before the repeat is consumed: an `at`
// job, a fire limit reached.)
func TestAdv16BulkRepeatOfAResumeCountsSkipped(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 100, base)
	h.advance(base)
	h.drain()
	h.command("x", base, `{"v":1,"op":"put","job":{"at":"2026-03-01T10:05:00Z","bucket":"b","misfire_policy":"fire_all","misfire_grace":"1h","payload":{"x":1}}}`)
	h.command("x", base, `{"v":1,"op":"pause"}`)
	h.bucketTrigger(codecs.ShardTrigger{Kind: codecs.KindBulk, T: base, Op: codecs.BulkResume, Bucket: "b", TriggerID: "r1"})
	require.Len(t, h.loops, 1, "the walk's first continuation")
	cont := h.loops[0]
	h.loops = nil
	before, err := h.st.Get(h.shardKey())
	require.NoError(t, err)
	before = append([]byte(nil), before...)
	// The chunk runs: its command is acknowledged, then the process dies
	// before its table write lands (the shard record is as it was).
	h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), cont.Key, base, cont.Value)
	require.NoError(t, h.st.Set(h.shardKey(), before))
	h.loops = nil
	// Redelivered: the chunk runs again (x is still paused at version 2).
	h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), cont.Key, base, cont.Value)
	h.loops = nil
	var cmds []Msg
	for _, m := range h.prod.msgs {
		if m.Headers[codecs.BulkHeader] != nil {
			cmds = append(cmds, m)
		}
	}
	require.Len(t, cmds, 2, "the chunk's command, written twice")
	// The first copy is applied; x fires at 10:05 and completes.
	h.deliverCommandWithHeaders(cmds[0], base.Add(time.Minute))
	h.drain()
	h.advance(base.Add(5 * time.Minute))
	h.drain()
	v, err := h.st.Get("x")
	require.NoError(t, err)
	rec, err := codecs.DecodeJobRecord(v)
	require.NoError(t, err)
	t.Logf("x after its fire: version %d %s", rec.Version, rec.Status)
	// The second copy: applied already, it must change nothing and count
	// as nothing.
	h.deliverCommandWithHeaders(cmds[1], base.Add(time.Minute))
	h.drain()
	raw, err := h.st.Get(h.shardKey())
	require.NoError(t, err)
	q := h.s.decodeShardBulk(h.shardKey(), raw).Bulk.Queue
	require.Len(t, q, 1)
	if q[0].Skipped != 0 {
		t.Errorf("bulk resume r1: skipped %d after its command was handled a second time (want 0; matched %d, changed %d)", q[0].Skipped, q[0].Matched, q[0].Changed)
	}
}
