package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv31BucketOpenRefStuckAfterSameDirRestart: the model of
// TestAdv17RepeatDropNeverHealsTheChangelog applied to a bucket chunk.
// The trigger's one callback fires j0, j1 (v1); its open write reached the
// changelog (Durable), its final write (Done) did not: the changelog
// produce failed and the partition restarted on the same data dir, whose
// store holds Done. The trigger, delivered again, finds Done and writes
// nothing, so the changelog keeps the ref Open for good. A put of j0 (v2)
// then sees no open chunk (local Done) and leaves no mark. After a move to
// an empty disk the restored ref is Open again: the next command on j0 (a
// pause) "sends the fire the open chunk may have sent" with j0's current
// record, v2. No trigger is redelivered at all.
func TestAdv31BucketOpenRefStuckAfterSameDirRestart(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 100, true, "j0", "j1")
	msg, off := bucketT46, l.nextOff()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	require.Len(t, l.fired(), 2)
	// Restart on the same data dir: the trigger is delivered again.
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	require.Len(t, l.fired(), 2, "local Done: the redelivery fires nothing")
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j0", at, 2, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`), false)
	l.loops = nil
	l.moveToNewOwner()
	sh := l.shard()
	t.Logf("restored fan-outs: %+v", sh.Fanouts)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j0", at.Add(time.Minute), 3, []byte(`{"v":1,"op":"pause"}`), false)
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}

// TestAdv31BucketOpenRefNeverForgotten: the same history without the put:
// the ref restored Open is never closed (nothing delivers the trigger
// again) and never pruned (only done fan-outs are), through 700 advances
// and 12 minutes; each such ref holds one of the shard's maxFanouts slots
// for good.
func TestAdv31BucketOpenRefNeverForgotten(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 100, true, "j0", "j1")
	msg, off := bucketT46, l.nextOff()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	l.loops = nil
	l.moveToNewOwner()
	for i := 1; i <= 700; i++ {
		l.advance(at.Add(time.Duration(i) * time.Second))
	}
	for _, f := range l.shard().Fanouts {
		require.Falsef(t, f.Open && !f.Done, "fan-out %s still open after 700 advances: %+v", f.TriggerID, f)
	}
}
