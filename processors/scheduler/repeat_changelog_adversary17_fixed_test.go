package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv17Log is a partition harness with a model of the table's changelog
// topic: what of the table writes reached Kafka (goka writes the local
// store first, then produces the changelog record asynchronously).
type adv17Log struct {
	*partitionHarness
	changelog map[string][]byte
	// dieInLastWait: a lost callback died waiting for its last Durable
	// (a bucket chunk's end, after its fires), so only what its waits
	// before that made durable reached the changelog.
	dieInLastWait bool
	// wentOn: a lost write's owner went on (its changelog produce failed,
	// the process did not die): every later Durable wait on it fails, as
	// clients.WriteAcks reports the failure, and the callback with it.
	wentOn      bool
	failedWaits int // callbacks that failed so
}

// run delivers one input to cb; its table writes reach the changelog
// unless lost (the process died, or the changelog produce failed, after
// the local write), except those the callback waited for (Config.Durable).
func (l *adv17Log) run(cb func(goka.Context, any), topic goka.Stream, key string, ts time.Time, off int64, msg []byte, lost bool) {
	l.t.Helper()
	ctx := &simCtx{topic: topic, key: key, table: l.st, ts: ts, offset: off, ctx: context.Background()}
	if l.wentOn {
		ctx.durableErr = errors.New("sim: an earlier table write failed")
	}
	if err := ctx.run(cb, msg); err != nil && l.wentOn {
		// The callback failed at its wait: goka fails the partition,
		// nothing of it is committed, its writes reach nobody.
		l.failedWaits++
		return
	} else {
		require.NoError(l.t, err)
	}
	durable := ctx.durable
	if n := len(ctx.durables); l.dieInLastWait && n > 0 {
		durable = 0
		if n >= 2 {
			durable = ctx.durables[n-2]
		}
	}
	for i, o := range ctx.outs {
		switch o.Kind {
		case simOutLoop:
			l.loops = append(l.loops, o)
		case simOutTable:
			if lost && i >= durable {
				continue
			}
			if o.Value == nil {
				delete(l.changelog, o.Key)
			} else {
				l.changelog[o.Key] = o.Value
			}
		}
	}
}

func (l *adv17Log) advance(t time.Time) {
	l.now = t
	l.off++
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t, l.off, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t}), false)
	l.drainLoops()
}

// drainLoops delivers the loopback records queued, and those they send,
// their table writes reaching the changelog.
func (l *adv17Log) drainLoops() {
	for len(l.loops) > 0 {
		lp := l.loops[0]
		l.loops = l.loops[1:]
		l.off++
		l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), lp.Key, l.now, l.off, lp.Value, false)
	}
}

// moveToNewOwner hands the partition to an instance with an empty data dir:
// its table is restored from the changelog.
func (l *adv17Log) moveToNewOwner() {
	l.t.Helper()
	l.wentOn = false
	l.open()
	require.NoError(l.t, l.st.Set(l.shardKey(), l.changelog[l.shardKey()]))
	for k, v := range l.changelog {
		if k != l.shardKey() {
			require.NoError(l.t, l.st.Set(k, v))
		}
	}
}

// TestAdv17RepeatDropNeverHealsTheChangelog: promises (docs/topics.md,
// "Delivery guarantees": a crash or a failed produce "can therefore repeat
// fires, never lose them"; "Repeats after a crash": a repeat changes
// nothing because "the job's record already holds its effect";
// docs/reliability.md: a new owner "owes exactly the same fires").
//
// goka's SetValue writes the local store first and produces the changelog
// record asynchronously (goka v1.1.16 context.go setValueForKey); the
// input's commit waits for that produce. A put of j (every 1s) at offset
// 0: its local write is done, then the changelog produce fails (or the
// process is killed with the record in the producer's buffer; with
// --sync-store the local write is on disk). The input is not committed;
// the partition restarts on the same data dir (its recovery re-reads the
// changelog from the store's offset: nothing for j) and offset 0 is
// delivered again. The local record holds Applied 1, so the redelivery is
// a repeat and dropped: nothing is written, and j's record never reaches
// the changelog. Before Applied the redelivery wrote the record again and
// the changelog healed. j fires on this instance; then the partition moves
// to an instance with an empty disk (a rebalance, a rescheduled pod),
// which restores the table from the changelog: no j.
//
// Expected: j fires every second after the move, as before it. Got: j
// fires until the move, then never again (the new owner has no record of
// it; GET /v1/jobs/j answers 404). Severity: lost fires (a whole job lost).
// The same holds for a lost pause or delete (the new owner fires a paused
// or deleted job) and a lost update (the old payload after the move).
// With the repeat check switched off this test passes. Corroboration:
// TestSim -sim.crashkeep -sim.first=500001 -sim.seeds=150 -sim.ops=800
// fails 21 seeds / 766 violations on this code, 13 / 199 with the repeat
// check switched off.
func TestAdv17RepeatDropNeverHealsTheChangelog(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, now), changelog: map[string][]byte{}}
	l.advance(now)
	put := []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":1}}}`)
	// First delivery: the local write lands, its changelog record does not.
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", now, 0, put, true)
	// Redelivered to the restarted partition (same store).
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", now, 0, put, false)
	for i := 1; i <= 3; i++ {
		l.advance(now.Add(time.Duration(i) * time.Second))
	}
	before := len(l.fired())
	require.Equal(t, 3, before, "j fires on its first owner")

	l.moveToNewOwner()
	for i := 4; i <= 10; i++ {
		l.advance(now.Add(time.Duration(i) * time.Second))
	}
	if got := len(l.fired()) - before; got != 7 {
		_, inLog := l.changelog["j"]
		t.Errorf("j (every 1s) after its partition moved at 12:00:03: %d of 7 fires up to 12:00:10 (j's record in the changelog: %v)", got, inLog)
	}
}
