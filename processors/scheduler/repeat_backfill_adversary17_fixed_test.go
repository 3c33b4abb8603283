package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv17CommandAt is commandAt that can lose the command's loopbacks (a
// crash after its table write landed, before its loopback was produced).
func (h *partitionHarness) adv17CommandAt(id string, ts time.Time, js string, off int64, dropLoops bool) {
	h.t.Helper()
	ctx := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: id, table: h.st, ts: ts, offset: off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(h.s.onCommand, []byte(js)))
	for _, o := range ctx.outs {
		if o.Kind == simOutLoop && !dropLoops {
			h.loops = append(h.loops, o)
		}
	}
}

// adv17Advance advances the shard to t, drains the loopbacks, and delivers
// every backfill step the advance sent on the backfill topic (and the
// loopbacks those leave).
func (h *partitionHarness) adv17Advance(t time.Time) {
	h.t.Helper()
	h.now = t
	var steps []simOut
	h.off++
	ctx := &simCtx{topic: h.s.cfg.Layout.ShardTriggers(), key: h.shardKey(), table: h.st, ts: t, offset: h.off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(h.s.onTrigger, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t})))
	collect := func(outs []simOut) {
		for _, o := range outs {
			switch {
			case o.Kind == simOutLoop:
				h.loops = append(h.loops, o)
			case o.Kind == simOutEmit && o.Topic == string(h.s.cfg.Layout.SchedulerBackfill()):
				steps = append(steps, o)
			}
		}
	}
	collect(ctx.outs)
	for len(h.loops) > 0 || len(steps) > 0 {
		for len(h.loops) > 0 {
			l := h.loops[0]
			h.loops = h.loops[1:]
			h.off++
			c := &simCtx{topic: h.s.cfg.Layout.SchedulerLoop(), key: l.Key, table: h.st, ts: h.now, offset: h.off, ctx: context.Background()}
			require.NoError(h.t, c.run(h.s.onLoop, l.Value))
			collect(c.outs)
		}
		for len(steps) > 0 {
			s := steps[0]
			steps = steps[1:]
			h.off++
			c := &simCtx{topic: h.s.cfg.Layout.SchedulerBackfill(), key: s.Key, table: h.st, ts: h.now, offset: h.off, ctx: context.Background()}
			require.NoError(h.t, c.run(h.s.onBackfill, s.Value))
			collect(c.outs)
		}
	}
}

// adv17Backfilled counts the backfill-flagged dispatch events of job id.
func (h *partitionHarness) adv17Backfilled(id string) int {
	n := 0
	for _, m := range h.prod.msgs {
		d, err := codecs.DecodeDispatch(m.Value)
		require.NoError(h.t, err)
		if d.JobID == id && d.Backfill {
			n++
		}
	}
	return n
}

func (h *partitionHarness) adv17Record(id string) *codecs.JobRecord {
	h.t.Helper()
	v, err := h.st.Get(id)
	require.NoError(h.t, err)
	rec, err := codecs.DecodeJobRecord(v)
	require.NoError(h.t, err)
	return rec
}

// TestAdv17ConditionalBackfillRepeatNeverRejoins: promise (docs/topics.md,
// "Repeats after a crash"): "A repeated `backfill` sends its step
// registration again (no second backfill)"; and "Backfill": every time of
// [from, to) is dispatched.
//
// Job j (every 1s). A `backfill` of [12:00:00, 12:00:10) with
// `if_version` 1 (the job's version; a backfill keeps it) at offset 1. Its
// table write lands, then the process dies before its registry join (a
// loopback) is produced: the commit names exactly this effect as one a
// crash may lose and repeated() re-sends. Before the crash the partition
// also consumed a pause (offset 2) and a resume (offset 3) of j: version 3,
// the backfill kept in the record. All three are redelivered.
//
// The repeat of the backfill is at offset 1 < Applied-1 = 3, so it is
// checked first: if_version 1 != 3, version_conflict, rejected, and
// repeated() (the join) never runs. The pause and resume are dropped as
// repeats. The record keeps Backfill b-0-1 "in progress" forever, the
// shard's registry never lists it, no advance ever steps it.
//
// Expected: the 10 backfill fires go out within a few advances, and the
// record's backfill ends. Got: 0 backfill fires after 60 advances; the
// record still holds the backfill (0 of 10 dispatched), so every further
// backfill of j is refused "has a backfill in progress" until a cancel or a
// put. Severity: lost fires (the whole backfill), stuck backfill.
func TestAdv17ConditionalBackfillRepeatNeverRejoins(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	h := newPartitionHarness(t, 100, now)
	h.adv17Advance(now)
	h.adv17CommandAt("j", now, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":1}}}`, 0, false)
	h.adv17Advance(now.Add(time.Second))
	require.Equal(t, uint64(1), h.adv17Record("j").Version)

	bf := `{"v":1,"op":"backfill","from":"2026-03-01T12:00:00Z","to":"2026-03-01T12:00:10Z","if_version":1}`
	pause := `{"v":1,"op":"pause"}`
	resume := `{"v":1,"op":"resume"}`
	ts := now.Add(time.Second)
	// Before the crash: the backfill's table write lands, its join is lost;
	// the pause and resume are applied.
	h.adv17CommandAt("j", ts, bf, 1, true)
	h.adv17CommandAt("j", ts, pause, 2, false)
	h.adv17CommandAt("j", ts, resume, 3, false)
	h.drain()
	rec := h.adv17Record("j")
	require.NotNil(t, rec.Backfill, "the backfill is in the record")
	require.Equal(t, uint64(3), rec.Version)
	// The crash: offsets 1-3 are consumed again.
	h.adv17CommandAt("j", ts, bf, 1, false)
	h.adv17CommandAt("j", ts, pause, 2, false)
	h.adv17CommandAt("j", ts, resume, 3, false)
	h.drain()

	for i := 2; i < 62; i++ {
		h.adv17Advance(now.Add(time.Duration(i) * time.Second))
	}
	got := h.adv17Backfilled("j")
	rec = h.adv17Record("j")
	var left string
	if rec.Backfill != nil {
		left = fmt.Sprintf("; the record still holds backfill %s (%d of %d dispatched); shard registry: %v",
			rec.Backfill.ID, rec.Backfill.Done, rec.Backfill.Total, h.shard().Backfills)
	}
	if got != 10 || rec.Backfill != nil {
		t.Errorf("backfill [12:00:00, 12:00:10) of j: %d of 10 fires dispatched after 60 advances%s", got, left)
	}
	// A further backfill is refused while the dead one is held.
	h.adv17CommandAt("j", now.Add(70*time.Second), `{"v":1,"op":"backfill","from":"2026-03-01T12:30:00Z","to":"2026-03-01T12:30:05Z"}`, 4, false)
	if r := h.adv17Record("j"); r.Backfill != nil && strings.HasSuffix(r.Backfill.ID, "-1") {
		t.Errorf("a new backfill of j (offset 4) was refused: the record still holds %s", r.Backfill.ID)
	}
}

// TestAdv17RejectedBackfillAppliedOnItsRepeat: promises (docs/topics.md):
// "Invalid commands go to `chronos-rejects` and change nothing"; "Repeats
// after a crash": "Chronos applies each command once all the same ... a
// repeat changes nothing"; "Backfill": refused "when the job has a
// backfill in progress".
//
// Job j (every 1s). backfill [12:00:00, 12:00:10) at offset 1 starts
// b-0-1; the same backfill sent again at offset 2 (a client retry) is
// refused (invalid_field: b-0-1 in progress), as the contract says. The
// next advance steps b-0-1 to its end (10 fires; the record drops the
// backfill, Applied stays 2). The process dies before committing offsets 1
// and 2, which are consumed again: offset 1 is a repeat (1 < Applied) and
// dropped, but offset 2 is past the record's Applied, so it is decided
// again, against a record whose backfill the steps (not a command) have
// ended meanwhile: it is accepted and starts b-0-2. Before Applied the
// repeat of offset 1 would have restarted b-0-1 and offset 2 been refused
// again; now the command that was refused (its reject already on
// chronos-rejects) takes effect on its redelivery.
//
// Expected: the range is backfilled once (10 backfill events), and offset
// 2 stays refused. Got: b-0-2 runs too: 20 backfill events, each fire_id
// of the range twice. Severity: spurious apply of a rejected command
// (duplicate backfill fires).
func TestAdv17RejectedBackfillAppliedOnItsRepeat(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	h := newPartitionHarness(t, 100, now)
	h.adv17Advance(now)
	h.adv17CommandAt("j", now, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":1}}}`, 0, false)
	h.adv17Advance(now.Add(time.Second))

	bf := `{"v":1,"op":"backfill","from":"2026-03-01T12:00:00Z","to":"2026-03-01T12:00:10Z"}`
	ts := now.Add(time.Second)
	h.adv17CommandAt("j", ts, bf, 1, false)
	h.drain()
	h.adv17CommandAt("j", ts, bf, 2, false) // refused: b-0-1 in progress
	h.drain()
	require.Equal(t, "b-0-1", h.adv17Record("j").Backfill.ID)
	for i := 2; i < 5; i++ {
		h.adv17Advance(now.Add(time.Duration(i) * time.Second))
	}
	require.Equal(t, 10, h.adv17Backfilled("j"), "b-0-1 ran to its end")
	require.Nil(t, h.adv17Record("j").Backfill)

	// The crash: offsets 1 and 2 again.
	h.adv17CommandAt("j", ts, bf, 1, false)
	h.drain()
	h.adv17CommandAt("j", ts, bf, 2, false)
	h.drain()
	for i := 5; i < 10; i++ {
		h.adv17Advance(now.Add(time.Duration(i) * time.Second))
	}
	rec := h.adv17Record("j")
	if got := h.adv17Backfilled("j"); got != 10 || rec.Backfill != nil {
		id := ""
		if rec.Backfill != nil {
			id = rec.Backfill.ID
		}
		t.Errorf("backfill [12:00:00, 12:00:10) sent twice, the second refused (b-0-1 in progress): %d backfill events after the redelivery (want 10); a backfill in the record: %q", got, id)
	}
}
