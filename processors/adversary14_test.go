//go:build adversary14

package processors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// Adversarial reproductions for issue 14 item 6, bulk operations (review
// adv14). Each test states the broken promise and fails on the code as
// reviewed. Run one at a time:
//
//	go test -tags adversary14 -count=1 -run TestAdv14ForgedBarrier ./processors/
//	go test -tags adversary14 -count=1 -run TestAdv14ResentWhileInProgress ./processors/

// TestAdv14ForgedBarrier: anyone with Write on chronos-jobs (the command
// topic, open to every command producer, docs/security.md) can write a bulk
// barrier: a record keyed by a shard key (topology.ShardKeys is public and
// deterministic) whose value is the in-progress operation's internal
// record with counts of their choosing. The scheduler takes it as the real
// barrier: the operation is recorded finished with the forged counts, the
// next queued operation starts, and the walk's remaining continuations are
// dropped (their operation is no longer Queue[0]), so the rest of the
// bucket is never paused while GET /v1/bulk/{id} says done.
//
// Broken promises (docs/topics.md "Bulk operations"): the operation
// changes every job of the bucket; "the operation is finished on that
// shard, with its counts, when the scheduler reaches the barrier, that is
// once every command it wrote has been applied"; the counts are the
// shards' own. docs/security.md's chronos-jobs row does not mention it.
func TestAdv14ForgedBarrier(t *testing.T) {
	t.Parallel()
	const n = 2000
	env, record, shard, t0 := bulkEnv(t, "f", n)
	v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: "f", TriggerID: "p1"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "f", v, t0.Add(time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if s := record("f-0000").Status; s != codecs.StatusPaused {
			return fmt.Errorf("f-0000 is %s: the walk has not started", s)
		}
		return nil
	})
	shardKeys, err := topology.ShardKeys(1)
	require.NoError(t, err)
	forged := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBulk, T: t0.Add(time.Minute), Op: codecs.BulkPause,
		Bucket: "f", TriggerID: "p1", Matched: 7, Changed: 7})
	env.Produce(string(env.Layout.Jobs()), shardKeys[0], forged, t0.Add(time.Minute))
	var res codecs.BulkResult
	testenv.Eventually(t, 2*time.Minute, func() error {
		var ok bool
		if res, ok = shard().Bulk.Finished("p1"); !ok {
			return fmt.Errorf("p1 not finished")
		}
		return nil
	})
	env.WaitApplied()
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	env.WaitApplied()
	var active int
	for i := 0; i < n; i++ {
		if record(fmt.Sprintf("f-%04d", i)).Status != codecs.StatusPaused {
			active++
		}
	}
	require.Equal(t, [2]int64{n, n}, [2]int64{res.Matched, res.Changed},
		"the shard's counts of p1 are the forger's (%d jobs of the bucket left active)", active)
	require.Zero(t, active, "jobs of the bucket left active by a pause reported finished")
}
