package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdv31BucketRerunNarrowedByNewMember: within the fix's own model
// (process death, new owner restored from the changelog, commands applied
// there before the redelivery). Chunks of 2. The trigger's chunk fires m0
// and m1 (v1), open through m1; its final write is lost. On the new owner
// a put of a new member m05 (between m0 and m1) is applied first; the
// trigger delivered again runs the chunk from After="" again: m0, m05. Its
// final write says After=m05, not open: m1, which the lost chunk fired,
// now reads as not yet reached. A put of m1 (v2) then neither sends m1's
// fire nor marks it, and the continuation fires m1@t46 with v2.
func TestAdv31BucketRerunNarrowedByNewMember(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 2, true, "m0", "m1")
	msg, off := bucketT46, l.nextOff()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	require.Len(t, l.fired(), 2, "m0@t46 and m1@t46 went out before the crash")
	l.loops = nil
	l.moveToNewOwner()

	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m05", at, 2, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":1}}}`), false)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	t.Logf("after the redelivery: %+v", l.shard().Fanouts)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m1", at, 3, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`), false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}

// TestAdv31BucketRerunNarrowedByMovedMember: the same with m05 an existing
// job of bucket c moved into b by a put (not a new job).
func TestAdv31BucketRerunNarrowedByMovedMember(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 2, true, "m0", "m1")
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m05", at, 2, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"c","payload":{"v":1}}}`), false)
	msg, off := bucketT46, l.nextOff()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	l.loops = nil
	l.moveToNewOwner()
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m05", at, 3, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":1}}}`), false)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m1", at, 4, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`), false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
