package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestPassStartLostPutBeforeRedelivery was a break of docs/topics.md's
// "no fire_id is ever dispatched with two different payloads" (found
// 2026-12-03 reading the code for the mid-pass crash of docs/reliability.md;
// fixed 2026-12-04: the pass's start is durable before its first fire,
// fanout.go beginDurably).
//
// An advance's first callback dispatches its fires (acknowledged by the
// broker: ProduceSync) and writes the shard record that says the pass to T
// began; the process dies before that record reaches the changelog. The
// shard record of a pass under way is first written at its first yield or
// when it completes, so nothing durable says the advance ran. A new owner
// restores the partition from the changelog (the watermark before T) and,
// since goka consumes each input topic on its own, may apply a put of the
// job before the advance is delivered again: the put owes the times after
// the old watermark under its new definition, and the advance delivered
// again sends j@12:00:01..03 with payload B after the first owner sent them
// with A.
//
// Expected: each fire_id with one payload: the put, like an update of a job
// the advance under way has not reached, first sends what the job owes up
// to T under the old definition (the table says, durably, that the advance
// to T began: its shard record with PassOpen, written and acknowledged by
// the changelog before the first fire). The simulation reaches it with
// -sim.lateredeliver.
func TestPassStartLostPutBeforeRedelivery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, now), changelog: map[string][]byte{}}
	l.advance(now)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", now, 0, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`), false)

	// The advance to 12:00:03 in one callback: its fires go out, its table
	// writes never reach the changelog; the process dies.
	t3 := now.Add(3 * time.Second)
	l.now = t3
	l.lostThenPut(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t3}, 3, "j", `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`)
	l.advance(now.Add(5 * time.Second))
	l.requireOnePayload()
}

// lostThenPut delivers tr to the shard with its table writes lost (the
// process dies after its fires, want of them, went out), hands the
// partition to a new owner restored from the changelog, applies there the
// command js of job id first (record time tr.T), then tr delivered again
// and the loopbacks it sends.
func (l *adv17Log) lostThenPut(tr codecs.ShardTrigger, want int, id, js string) {
	l.t.Helper()
	l.off++
	msg := codecs.EncodeInternal(tr)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), tr.T, l.off, msg, true)
	require.Len(l.t, l.fired(), want, "fired before the crash")
	l.loops = nil
	l.moveToNewOwner()
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, tr.T, 1000, []byte(js), false)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), tr.T, l.off, msg, false)
	l.drainLoops()
}

// trigger delivers the advance to t from the trigger topic (the harness's
// time becomes t), its table writes lost or not, and returns the record,
// to deliver again.
func (l *adv17Log) trigger(t time.Time, lost bool) []byte {
	l.t.Helper()
	l.now = t
	l.off++
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t})
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t, l.off, adv, lost)
	return adv
}

// TestPassChunkLostPauseAndPut is the mid-pass crash of docs/reliability.md
// (simulation seed 30042 x 3000) in a harness (fixed 2026-12-04):
//
// A pass to 12:00:01 fires one job a callback (a, b, c). Its first
// callback's shard record (cursor after a) reaches the changelog; the
// second sends b@12:00:01 and its record (cursor after b) does not: the
// process dies. The new owner restores cursor a, so b's entry is after the
// cursor, not yet handled as far as its table knows. A pause of b (ts
// 12:00:00.5, before the fire) then handles b only through just before
// 12:00:01, and a put (payload B) owes 12:00:01 again: the continuation,
// delivered again, sends b@12:00:01 with B after it went out with A.
//
// Expected: each fire_id with one payload. The second callback wrote, and
// waited for, the shard record saying it may send fires after cursor a
// (PassOpen) before it fired: the pause, finding b due after the cursor
// and at or before the pass's T, first sends b's fires up to T under A, as
// if the pass had reached b before it (maybeSent), so the put owes nothing
// up to T.
func TestPassChunkLostPauseAndPut(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarnessBudget(t, 1, time.Nanosecond, now), changelog: map[string][]byte{}}
	l.advance(now)
	for i, id := range []string{"a", "b", "c"} {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, now, int64(i), []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`), false)
	}
	t1 := now.Add(time.Second)
	l.trigger(t1, false)
	require.Len(t, l.loops, 1, "one job a callback")
	cont := l.loops[0]
	l.loops = nil
	l.off++
	l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), cont.Key, t1, l.off, cont.Value, true)
	require.Contains(t, l.fired(), "b@2026-03-01T12:00:01Z")
	l.loops = nil

	l.moveToNewOwner()
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "b", now.Add(500*time.Millisecond), 3, []byte(`{"v":1,"op":"pause"}`), false)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "b", now.Add(600*time.Millisecond), 4, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`), false)
	l.loops = append(l.loops, cont) // the continuation delivered again
	l.drainLoops()
	l.advance(now.Add(3 * time.Second))
	l.requireOnePayload()
}
