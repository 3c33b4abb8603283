package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv32LostPutBeforeAdvance (adversary round 32, fixed the same way
// 2026-12-04): the advance-path analog of
// TestAdv32LostPutBeforeChunk. The put of j (v2) is applied locally and
// its changelog produce fails; the advance that follows fires j@12:00:01
// with v2 (PassOpen durable), and the process dies before the pass's end
// reaches the changelog. On the new owner j is v1 and the shard says
// PassOpen; the put delivered again owes j's times up to the pass's T under
// the record it replaces (maybeSent): j@12:00:01 with v1.
func TestAdv32LostPutBeforeAdvance(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, at), changelog: map[string][]byte{}}
	l.advance(at)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", at, 0, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"v":1}}}`), false)
	put := []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"v":2}}}`)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", at, 1, put, true)
	l.wentOn = true // the put's changelog write failed; the partition went on
	t1 := at.Add(time.Second)
	l.now = t1
	l.off++
	off := l.off
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t1})
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, off, adv, true)
	require.Equal(t, 1, l.failedWaits, "the pass's wait found the put's write failed")
	require.Empty(t, l.fired()["j@2026-12-01T12:00:01Z"], "no fire went out from the put's record")
	l.loops = nil
	l.moveToNewOwner()
	t.Logf("restored shard: advancing %v passopen %v", l.shard().Advancing, l.shard().PassOpen)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", at, 1, put, false)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, off, adv, false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
