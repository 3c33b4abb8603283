//go:build adversary14

package processors_test

import (
	"fmt"
	"strings"
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

// TestAdv14ResentWhileInProgress: the same bulk record sent again (same
// trigger_id: an HTTP client's retry of POST /v1/buckets/{b}/pause with
// its trigger_id, or "send the same record again" after a queue-full
// reject) while a shard is still walking it is not skipped: bulkEnqueue
// loops back the queued operation from the start (AfterKey "", counts 0)
// beside the walk already running, so the shard walks the bucket a second
// time. A job the user resumed after the first walk had paused it (a
// command sent meanwhile, applied in its own order) is paused again by the
// second walk, with no new operation sent.
//
// Broken promises (docs/topics.md "Bulk operations"): "A record with a
// trigger_id a shard still remembers as queued or finished is not run
// again"; "Jobs put into the target after a shard has walked past them
// are not affected; commands a user sends meanwhile apply in their own
// order"; "a crash or a rebalance repeats at most one chunk" (the same
// in-progress re-loop runs on a redelivered shard trigger after a crash,
// and every loopback reprocessed after a crash forks its own chain: the
// walk's only guard is Queue[0].TriggerID, not the cursor).
func TestAdv14ResentWhileInProgress(t *testing.T) {
	t.Parallel()
	const n = 2000
	env, record, shard, t0 := bulkEnv(t, "r", n)
	pauses := env.Collect(string(env.Layout.Jobs()))
	v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: "r", TriggerID: "p1"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "r", v, t0.Add(time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if s := record("r-0000").Status; s != codecs.StatusPaused {
			return fmt.Errorf("r-0000 is %s: the walk has not reached it", s)
		}
		return nil
	})
	// The user resumes the first job, which the walk has passed.
	env.Produce(string(env.Layout.Jobs()), "r-0000", []byte(`{"v":1,"op":"resume"}`), t0.Add(2*time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if s := record("r-0000").Status; s != codecs.StatusActive {
			return fmt.Errorf("r-0000 is %s", s)
		}
		return nil
	})
	// The same operation again, while the shard still walks it.
	require.True(t, shard().Bulk.Queued("p1"), "precondition: p1 still in progress (make n larger)")
	env.Produce(string(env.Layout.BucketTriggers()), "r", v, t0.Add(3*time.Minute))
	env.WaitConsumed(string(env.Layout.RouterGroup()), string(env.Layout.BucketTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	testenv.Eventually(t, 2*time.Minute, func() error {
		if _, ok := shard().Bulk.Finished("p1"); !ok {
			return fmt.Errorf("p1 not finished")
		}
		return nil
	})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	env.WaitApplied()
	var sent int
	for _, r := range commandRecords(pauses) {
		if string(r.Key) == "r-0000" {
			t.Logf("r-0000 command at offset %d: %s", r.Offset, r.Value)
			if strings.Contains(string(r.Value), `"op":"pause"`) {
				sent++
			}
		}
	}
	require.Equal(t, codecs.StatusActive, record("r-0000").Status,
		"a job resumed after the walk passed it was paused again by the resent operation (%d pause commands)", sent)
	require.Equal(t, 1, sent, "pause commands written for r-0000 by one operation")
}

// TestAdv14ReplayedContinuationForks: a bulk walk's continuation (a
// loopback keyed by the shard key) handled again, as goka hands it over
// again after a crash or a rebalance when its offset was not yet committed
// (commits lag the callbacks), is not recognised as old: bulkRun checks
// only that its trigger id is the one in progress, not its cursor, so the
// replayed continuation starts a second chain that walks every key after
// its cursor again, beside the chain already running. Every continuation
// handled again forks one more chain. Here one continuation of the first
// chunk is replayed after the user resumed a job the walk had passed: the
// job is paused again.
//
// Broken promises (docs/topics.md "Bulk operations"): "a crash or a
// rebalance repeats at most one chunk, whose jobs already changed are
// skipped"; "commands a user sends meanwhile apply in their own order".
// A fix: keep the walk's cursor in the shard record's Queue[0] and drop a
// continuation whose cursor is not the recorded one.
func TestAdv14ReplayedContinuationForks(t *testing.T) {
	t.Parallel()
	const n = 2000
	env, record, shard, t0 := bulkEnv(t, "c", n)
	cmds := env.Collect(string(env.Layout.Jobs()))
	v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: "c", TriggerID: "p1"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "c", v, t0.Add(time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if s := record("c-0005").Status; s != codecs.StatusPaused {
			return fmt.Errorf("c-0005 is %s: the walk has not passed it", s)
		}
		return nil
	})
	env.Produce(string(env.Layout.Jobs()), "c-0005", []byte(`{"v":1,"op":"resume"}`), t0.Add(2*time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if s := record("c-0005").Status; s != codecs.StatusActive {
			return fmt.Errorf("c-0005 is %s", s)
		}
		return nil
	})
	require.True(t, shard().Bulk.Queued("p1"), "precondition: p1 still in progress (make n larger)")
	// The continuation the first chunk wrote (cursor c-0000, counts 1/1),
	// handed over again.
	shardKeys, err := topology.ShardKeys(1)
	require.NoError(t, err)
	again := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBulk, T: t0.Add(time.Minute), Op: codecs.BulkPause,
		Bucket: "c", TriggerID: "p1", AfterKey: "c-0000", Matched: 1, Changed: 1})
	env.Produce(string(env.Layout.SchedulerLoop()), shardKeys[0], again, t0.Add(time.Minute))
	testenv.Eventually(t, 2*time.Minute, func() error {
		if _, ok := shard().Bulk.Finished("p1"); !ok {
			return fmt.Errorf("p1 not finished")
		}
		return nil
	})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	env.WaitApplied()
	var sent int
	for _, r := range commandRecords(cmds) {
		if strings.Contains(string(r.Value), `"op":"pause"`) {
			sent++
		}
	}
	t.Logf("%d pause commands for %d jobs", sent, n)
	require.Equal(t, codecs.StatusActive, record("c-0005").Status,
		"a job resumed after the walk passed it was paused again by a replayed continuation")
	require.LessOrEqual(t, sent, n+1, "a replayed continuation repeats at most one chunk (of one key)")
}
