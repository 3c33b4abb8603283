//go:build adversary32

package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdv32SameDirCommandOvertakesRedelivery: round 31's same-dir fix
// heals the changelog only when the trigger is delivered again before
// anything else. After the restart on the same data dir, chronos-jobs
// (another topic) is consumed first: a put of j0 (v2) sees the local store
// saying the fan-out is Done, sends nothing and leaves no mark, and its
// record reaches the changelog. The partition then moves (the restart's
// own rebalance) before the trigger's redelivery ran; the new owner
// restores the ref Open from the changelog and the trigger, delivered
// again, fires j0@t46 with v2: j0@t46 went out with v1 before the crash.
func TestAdv32SameDirCommandOvertakesRedelivery(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 100, true, "j0", "j1")
	msg, off := bucketT46, l.nextOff()
	// The chunk's open write is durable; the process dies waiting for its
	// end (Done), which the local store holds and the changelog does not.
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	require.Len(t, l.fired(), 2)
	l.loops = nil
	// Restart on the same data dir: the put of j0, on chronos-jobs, is
	// consumed before the trigger's redelivery.
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j0", at, 2, []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`), false)
	// A rebalance hands the partition to an empty disk before the trigger
	// was handled here.
	l.moveToNewOwner()
	t.Logf("restored fan-outs: %+v", l.shard().Fanouts)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
