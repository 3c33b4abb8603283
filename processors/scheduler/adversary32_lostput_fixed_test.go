package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdv32LostPutBeforeChunk (adversary round 32, fixed 2026-12-04: a
// callback waits for every earlier table write of the changelog, not only
// its own key's, clients.WriteAcks): the put of j0 (v2) is applied locally and
// its changelog produce fails (Durable waits only for the shard key's
// writes, so nothing waits for it); the bucket chunk that follows in the
// same partition reads the local record and fires j0@t46 with v2, its open
// write durable, and the process dies waiting for the chunk's end. The new
// owner restores j0 at v1 and the ref Open over j0; the put, never
// committed, is delivered again: fannedOut sends "the fire the open chunk
// may have sent" from the record it replaces, v1.
func TestAdv32LostPutBeforeChunk(t *testing.T) {
	t.Parallel()
	at := bucketAt
	l := newBucketLog(t, 100, true, "j0", "j1")
	put := []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`)
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j0", at, 2, put, true)
	l.wentOn = true // the put's changelog write failed; the partition went on
	msg, off := bucketT46, l.nextOff()
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, true)
	require.Equal(t, 1, l.failedWaits, "the chunk's wait found the put's write failed")
	require.Empty(t, l.fired()["j0@t46"], "no fire went out from the put's record")
	l.loops = nil
	l.moveToNewOwner()
	l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), "j0", at, 2, put, false)
	l.run(l.s.onTrigger, l.s.cfg.Layout.ShardTriggers(), l.shardKey(), at, off, msg, false)
	l.drainLoops()
	t.Logf("fires: %v", l.fired())
	l.requireOnePayload()
}
