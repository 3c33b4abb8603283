package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv31BucketLostChunkCompletedThenPut: within the fix's own model.
// m0 is a one-shot job (at 12:00:01) in bucket b. The advance to 12:00:01
// fires it and sends its complete loopback, not yet consumed when the
// bucket trigger's chunk fires m0@t46 and m1@t46 (v1; m0 still active),
// the chunk's final write lost. On the new owner the complete loopback
// (another topic) is consumed first: a status change outside command(),
// with no fan-out mark. A put of m0 (active again, v2) then finds the old
// record completed, so fannedOut neither sends m0's fire nor marks it, and
// the trigger delivered again fires m0@t46 with v2.
func TestAdv31BucketLostChunkCompletedThenPut(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	t1 := at.Add(time.Second)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, at), changelog: map[string][]byte{}, dieInLastWait: true}
	l.advance(at)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m0", at, 0, []byte(fmt.Sprintf(`{"v":1,"op":"put","job":{"at":%q,"bucket":"b","payload":{"v":1}}}`, t1.Format(time.RFC3339))), false)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m1", at, 1, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":1}}}`), false)

	// The advance to 12:00:01: m0 fires, its complete loopback is queued.
	l.now = t1
	l.off++
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, l.off, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t1}), false)
	require.Len(t, l.loops, 1, "m0's complete")
	complete := l.loops[0]
	l.loops = nil

	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: t1, Bucket: "b", TriggerID: "t46"}
	msg := codecs.EncodeInternal(tr)
	l.off++
	off := l.off
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, off, msg, true)
	require.Contains(t, l.fired(), "m0@t46")
	l.loops = nil
	l.moveToNewOwner()

	l.off++
	l.run(l.s.onLoop, l.s.cfg.Layout.SchedulerLoop(), complete.Key, t1, l.off, complete.Value, false)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "m0", t1, 2, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`), false)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, off, msg, false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
