package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv32SameDirAdvanceCommandOvertakes: the advance-path analog of
// TestAdv32SameDirCommandOvertakesRedelivery (held when written: the
// put's record carries how far the job was handled).
func TestAdv32SameDirAdvanceCommandOvertakes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, at), changelog: map[string][]byte{}}
	l.advance(at)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", at, 0, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"v":1}}}`), false)
	t1 := at.Add(time.Second)
	l.now = t1
	l.off++
	off := l.off
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t1})
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, off, adv, true)
	require.NotEmpty(t, l.fired())
	l.loops = nil
	// A late pause (ts before the fire) then a put, on the same data dir,
	// before the advance's redelivery; then a move.
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", at, 1, []byte(`{"v":1,"op":"pause"}`), false)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j", at, 2, []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":{"v":2}}}`), false)
	l.moveToNewOwner()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), t1, off, adv, false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
