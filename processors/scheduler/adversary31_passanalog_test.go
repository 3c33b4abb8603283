package scheduler

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv31PassLostThenPutOnSameOwner: the advance analogue of
// TestAdv31BucketLostChunkThenPutOnSameOwner (a control: expected to hold).
func TestAdv31PassLostThenPutOnSameOwner(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, now), changelog: map[string][]byte{}}
	l.advance(now)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", now, 0, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A"}}}`), false)
	t3 := now.Add(3 * time.Second)
	l.now = t3
	l.off++
	off := l.off
	msg := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t3})
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t3, off, msg, true)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", t3, 1, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B"}}}`), false)
	l.loops = nil
	l.moveToNewOwner()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t3, off, msg, false)
	l.drainLoops()
	l.advance(now.Add(5 * time.Second))
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
