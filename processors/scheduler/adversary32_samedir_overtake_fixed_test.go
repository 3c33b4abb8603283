package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdv32SameDirCommandOvertakesRedelivery: round 31's same-dir fix
// healed the changelog only when the trigger was delivered again before
// anything else. After a restart on the same data dir that kept the store,
// chronos-jobs (another topic) was consumed first: a put of j0 (v2) saw
// the local store saying the fan-out was Done, sent nothing and left no
// mark, and its record reached the changelog. The partition then moved
// before the trigger's redelivery ran; the new owner restored the ref Open
// from the changelog and the trigger, delivered again, fired j0@t46 with
// v2: j0@t46 went out with v1 before the crash (the open history of round
// 32). A store is now kept on its data dir only after a close that saw
// every changelog write finish (store.Options.Settled, wired by the
// instance: instance.TestStoreAheadOfChangelogIsDiscardedAfterACrash); a
// crash leaves it unsettled and the restart restores the partition from
// its changelog, which the history below does with moveToNewOwner at the
// restart. The put then finds the fan-out open and sends j0's fire under
// v1 with its mark, and the trigger delivered again skips j0.
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
	// Restart on the same data dir: the store is unsettled (the process
	// died with a write in flight), so it is discarded and the partition
	// restored from its changelog. The put of j0, on chronos-jobs, is
	// consumed before the trigger's redelivery.
	l.moveToNewOwner()
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
