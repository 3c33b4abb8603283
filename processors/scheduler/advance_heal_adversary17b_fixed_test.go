package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv17bRedeliveredAdvanceNeverHealsTheChangelog: promises
// (docs/topics.md, "Delivery guarantees": a crash "can therefore repeat
// fires, never lose them", a repeated event has the same fire_id and
// content; "Updates, deletes and versions": an update never sends again a
// fire_id the previous definition sent; docs/reliability.md: a new owner
// owes exactly the same fires).
//
// Round 17 made a redelivered *command* write its job's record again,
// because goka writes the local store before the changelog and a crash can
// keep a local write the changelog never got (-sim.crashkeep, the model
// docs/reliability.md adopted). The same holds for the advance's write of
// the shard record (its watermark), and a redelivered advance that finds
// its work done in the local store returns at once (passStart: skip)
// without writing anything: the changelog keeps the old watermark until
// the next advance writes a newer one.
//
// Inputs: job j (every 1s, payload A) at 12:00:00. The advance to 12:00:03
// dispatches j@12:00:01..03 with A and writes watermark 12:00:03 locally;
// the process is killed before that changelog record is produced. The
// partition restarts on the same data dir and the advance is delivered
// again: skipped, nothing written. Before the next clock tick the
// partition moves to an instance with an empty disk (a rebalance as the
// crashed pod rejoins), which restores watermark 12:00:00 from the
// changelog, and the user updates j (payload B, record time 12:00:03).
//
// Expected: the update continues after 12:00:03, what the first owner
// sent (j@12:00:04 next, with B); each fire_id with one payload. Got: the
// new owner's table says j is handled through 12:00:00, so the update owes
// 12:00:01..03 again and the next advance sends j@12:00:01, 02 and 03 with
// payload B: three fire_ids dispatched with two payloads. With the skip
// path writing the shard record again (as repeated() does for a command)
// this test passes. Severity: two payloads. Found by TestSim -sim.crashkeep -sim.seed=800013
// -sim.ops=1500 (op 319-336: a crash at an advance, restart on the kept
// store, a second crash that wiped it, a pause and a put of j0 before the
// next advance: j0@10:52:16 sent with puts 44 and 46); also 800017.
func TestAdv17bRedeliveredAdvanceNeverHealsTheChangelog(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, now), changelog: map[string][]byte{}}
	l.advance(now)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", now, 0, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`), false)

	// The advance to 12:00:03: its local write lands, its changelog record
	// does not (the process is killed).
	t3 := now.Add(3 * time.Second)
	l.now = t3
	l.off++
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t3})
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t3, l.off, adv, true)
	require.Len(t, l.fired(), 3, "j@12:00:01..03 dispatched")
	// Restarted on the same store: the advance is delivered again.
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t3, l.off, adv, false)
	require.Empty(t, l.loops)

	// The partition moves to an empty disk before the next tick; then the
	// user updates j.
	l.moveToNewOwner()
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", t3, 1, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`), false)
	l.advance(now.Add(4 * time.Second))
	l.advance(now.Add(5 * time.Second))
	l.requireOnePayload()
}
