package scheduler

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv15bBucketTriggerRedeliveredAfterOutageFiresAgain breaks
// docs/topics.md (bucket triggers): "One trigger record fans out once ...
// a crash or a rebalance repeats at most the chunk under way, never a
// member a finished chunk fired", and with it "no fire_id is ever
// dispatched with two different payloads".
//
// Mechanism: the "done" marker of a fan-out (codecs.FanoutRef.Done) is
// pruned by passDone once the shard's advance T is fanoutKeep (10 min) past
// its Finished time. The router forwards a trigger record to every shard
// with ctx.Emit and commits its input only afterwards, so a router that
// crashes between the two forwards the same record again when its
// partition is next consumed. If that happens after an outage (all
// instances down for more than 10 minutes: on restart the clock announces
// the current time at once, so the shards' first advance jumps past the
// keep window), the shards have already forgotten the fan-out, and the
// redelivered record fans out again, with the payloads the jobs have
// *now*: a member updated in between fires the same fire_id
// (<job>@<trigger id>) a second time with another payload. The 10 minutes
// are shard time, not the time the record could still be redelivered.
func TestAdv15bBucketTriggerRedeliveredAfterOutageFiresAgain(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 10, at)
	h.advance(at)
	h.drain()
	h.command("j0", at, `{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":1}}}`)
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: at.Add(time.Second), Bucket: "b", TriggerID: "close-2026-11"}
	h.now = tr.T
	h.bucketTrigger(tr) // forwarded by the router, which crashes before it commits
	h.drain()
	if got := h.fired()["j0@close-2026-11"]; len(got) != 1 {
		t.Fatalf("the trigger fired j0 %d times, want once", len(got))
	}
	// Outage of 11 minutes; on restart the clock announces the current
	// time, a command queued meanwhile updates j0, and the router, whose
	// input was never committed, forwards the same trigger record again.
	back := at.Add(11 * time.Minute)
	h.advance(back)
	h.drain()
	h.now = back
	h.command("j0", back, `{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`)
	h.bucketTrigger(tr)
	h.drain()
	h.requireOnePayload()
	if got := h.fired()["j0@close-2026-11"]; len(got) != 1 {
		t.Errorf("one trigger record fanned out %d times on one shard (payloads %q)", len(got), got)
	}
}
