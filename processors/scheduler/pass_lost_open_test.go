//go:build passlostopen

package scheduler

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestBucketTriggerLostPutBeforeRedelivery is an open break of docs/topics.md's
// "no fire_id is ever dispatched with two different payloads" for a bucket
// trigger, the gap TestPassStartLostPutBeforeRedelivery had for an advance
// (open; fails today, hence the tag):
//
//	go test -tags passlostopen -count=1 -run TestBucketTriggerLostPutBeforeRedelivery ./processors/scheduler/
//
// The trigger's one callback fires both members (j0@t46, j1@t46) with
// payload v1; the shard record that names the fan-out (codecs.FanoutRef)
// never reaches the changelog. On the new owner a put of j0 (payload v2) is
// applied before the trigger is delivered again, which fires j0@t46 with
// v2 (and j1@t46 again with v1: a repeat, as promised).
func TestBucketTriggerLostPutBeforeRedelivery(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &adv17Log{partitionHarness: newPartitionHarness(t, 100, at), changelog: map[string][]byte{}}
	l.advance(at)
	for i, id := range []string{"j0", "j1"} {
		l.run(l.s.onCommand, l.s.cfg.Layout.Jobs(), id, at, int64(i), []byte(`{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":1}}}`), false)
	}
	l.lostThenPut(codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: "t46"}, 2, "j0", `{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":{"v":2}}}`)
	l.requireOnePayload()
}
