package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv17CommandMsgAt delivers m (a chronos-jobs record with headers, as the
// Producer wrote it) at offset off, and queues its loopbacks.
func (h *partitionHarness) adv17CommandMsgAt(m Msg, ts time.Time, off int64) {
	h.t.Helper()
	sc := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: m.Key, table: h.st, ts: ts, offset: off, ctx: context.Background()}
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

// TestAdv17RepeatedBulkCommandCountedSkipped: promise (docs/topics.md,
// bulk operations, "Counts" and "Crashes, rebalances, repeats"): `skipped`
// counts the operation's commands "that lost to a newer version of their
// job"; a command handled again "changes nothing and is not counted in
// `skipped`"; and "Repeats after a crash": a command at or before its job
// record's offset is a repeat, counted `repeated`.
//
// A bulk pause p1 of bucket b walks job x (version 1) and writes
// pause(if_version 1) to chronos-jobs; it is consumed at offset 10 and
// applied (x paused, version 2, Applied 11). The user then resumes x
// (offset 11: version 3, Applied 12). The process dies before committing
// offset 10; Kafka delivers offsets 10 and 11 again. The repeat of the bulk
// pause is 10 < Applied-1 = 11, so it is checked: if_version 1 != 3,
// version_conflict, which takes the bulk skip path; bulkRepeat wants the
// job at version 2 and paused, it is at 3: the repeat is sent to the
// shard as a loss (bulk_skip, offset 11) and counted.
//
// Expected: p1 ends with changed 1, skipped 0 (the command was applied;
// its repeat changed nothing), and the metric counts it `repeated`. Got:
// skipped 1 (the operation reports it lost to a newer version, and
// chronos_commands_total counts it `skipped`). Severity: wrong count.
func TestAdv17RepeatedBulkCommandCountedSkipped(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 100, base)
	h.advance(base)
	h.drain()
	h.commandAt("x", base, `{"v":1,"op":"put","job":{"every":"1m","bucket":"b","payload":{"x":1}}}`, 0)
	h.drain()
	h.bucketTrigger(codecs.ShardTrigger{Kind: codecs.KindBulk, T: base, Op: codecs.BulkPause, Bucket: "b", TriggerID: "p1"})
	h.drain() // the walk: one chunk, its command produced
	var cmds []Msg
	for _, m := range h.prod.msgs {
		if m.Headers[codecs.BulkHeader] != nil {
			cmds = append(cmds, m)
		}
	}
	require.Len(t, cmds, 1, "the walk's command")
	ts := base.Add(time.Second)
	resume := `{"v":1,"op":"resume"}`

	h.adv17CommandMsgAt(cmds[0], ts, 10) // applied: x paused
	h.drain()
	require.Equal(t, codecs.StatusPaused, h.adv17Record("x").Status)
	h.commandAt("x", ts, resume, 11) // the user's resume
	h.drain()
	// The crash: offsets 10 and 11 again.
	h.adv17CommandMsgAt(cmds[0], ts, 10)
	h.drain()
	h.commandAt("x", ts, resume, 11)
	h.drain()

	raw, err := h.st.Get(h.shardKey())
	require.NoError(t, err)
	q := h.s.decodeShardBulk(h.shardKey(), raw).Bulk.Queue
	require.Len(t, q, 1, "p1 in progress (its barrier not consumed)")
	require.Equal(t, int64(1), q[0].Changed)
	if q[0].Skipped != 0 {
		t.Errorf("bulk pause p1: skipped %d after its one command was applied and then redelivered by a crash (want 0: changed %d, the command was applied, not lost)", q[0].Skipped, q[0].Changed)
	}
}
