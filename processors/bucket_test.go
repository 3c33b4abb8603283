package processors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestBucketTriggerFiresEveryActiveJobOnce puts a bucket of jobs across all
// partitions (small chunks, so fan-outs continue through the loopback),
// pauses some and deletes others, and sends a trigger record twice (as a
// redelivery would: one fan-out) and its trigger id once more in another
// record (a second fan-out, the same fire_ids): every active job fires once
// per fan-out, with the override payload; paused and deleted jobs and other
// buckets do not fire.
func TestBucketTriggerFiresEveryActiveJobOnce(t *testing.T) {
	t.Parallel()
	const n = 600
	env := testenv.New(t, 6)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.Fanout.ChunkSize = 37
	env.Start(cfg)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	far := codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "reports", Payload: []byte(`{"own":true}`)}
	keys, values := []string{}, [][]byte{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("r-%03d", i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, far))
	}
	other := far
	other.Bucket = "other"
	keys, values = append(keys, "o-1"), append(values, testenv.PutCommand("o-1", other))
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.Produce(string(env.Layout.Jobs()), "r-000", []byte(`{"v":1,"op":"pause"}`), t0)
	env.Produce(string(env.Layout.Jobs()), "r-001", []byte(`{"v":1,"op":"delete"}`), t0)
	env.WaitApplied()

	trig, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "reports", TriggerID: "nightly-1", Payload: []byte(`{"run": 1}`)})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "reports", trig, t0)
	env.Produce(string(env.Layout.BucketTriggers()), "reports", trig, t0)                  // the same record again (as redelivered): one fan-out
	env.Produce(string(env.Layout.BucketTriggers()), "reports", trig, t0.Add(time.Second)) // another record with the same trigger_id: fans out again
	env.Produce(string(env.Layout.BucketTriggers()), "reports", []byte(`{"v":1}`), t0)     // no bucket: rejected

	dispatch.WaitLen(t, 2*(n-2), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	count := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		count[d.FireID]++
		require.Equal(t, codecs.TriggerBucket, d.Trigger)
		require.Equal(t, "reports", d.Bucket)
		require.Equal(t, "nightly-1", d.TriggerID)
		require.JSONEq(t, `{"run":1}`, string(d.Payload))
	}
	require.Len(t, count, n-2)
	for i := 2; i < n; i++ {
		require.Equal(t, 2, count[fmt.Sprintf("r-%03d@nightly-1", i)], "job r-%03d", i)
	}
}
