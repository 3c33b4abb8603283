package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv31BucketLostChunkThenPutOnSameOwner (adversary round 31, fixed
// 2026-12-04): the chunk's final shard write (After=j1, not open) was lost
// (its changelog produce failed, or had not completed), but the owner went
// on: a put of j0 (payload v2), consumed after the chunk on the same owner,
// was committed with its record in the changelog. Locally the shard record
// said the chunk was past j0 and not open, so fannedOut neither sent j0's
// fire nor marked it. The new owner restored the Open ref and the v2
// record; the trigger (uncommitted) was delivered again and fired j0@t46
// with v2 after it went out with v1. Now a chunk waits for its end to
// reach the changelog before the callback returns (a failed write fails
// the callback, and no later input runs on that owner): the callback's
// writes are all durable here, and whatever it loses is after them.
func TestAdv31BucketLostChunkThenPutOnSameOwner(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 100, false, "j0", "j1")
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: "t46"}
	l.off++
	msg := codecs.EncodeInternal(tr)
	off := l.off
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	require.Len(t, l.fired(), 2)
	// Same owner, next input: a put of j0, committed (its write reaches the changelog).
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j0", at, 2, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`), false)
	l.loops = nil
	l.moveToNewOwner()
	// The trigger, never committed, is delivered again.
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
