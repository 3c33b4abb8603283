package processors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestBulkPauseResumeDelete puts jobs of two tenants (id prefixes) and two
// buckets across every partition, with small chunks so each shard's
// fan-out continues through the loopback, some of them already paused or
// deleted. A bulk pause of a bucket pauses exactly its active jobs, with
// the note and the sender; a bulk resume of a prefix resumes exactly that
// prefix's paused jobs; a bulk delete of a prefix deletes exactly its live
// jobs; repeating an operation changes nothing; a bad one is rejected.
// Every change is an ordinary command on chronos-jobs, with the sender as
// its actor.
func TestBulkPauseResumeDelete(t *testing.T) {
	t.Parallel()
	const parts = 4
	env := testenv.New(t, parts)
	rejects := env.Collect(string(env.Layout.Rejects()))
	jobs := env.Collect(string(env.Layout.Jobs()))
	cfg := env.Config()
	cfg.Fanout.ChunkSize = 7
	inst := env.Start(cfg)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)

	var commandsBefore int
	// want is the oracle: each job's status after every step.
	want := map[string]codecs.Status{}
	bucket := map[string]string{}
	var keys []string
	var values [][]byte
	for i := 0; i < 160; i++ {
		id := fmt.Sprintf("t%d/job-%03d", i%2, i)
		b := []string{"fleet", "other"}[i%3%2]
		def := codecs.JobDef{Cron: "0 0 1 1 *", Bucket: b}
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, def))
		want[id], bucket[id] = codecs.StatusActive, b
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	for i := 0; i < 160; i += 11 {
		id := keys[i]
		env.Produce(string(env.Layout.Jobs()), id, []byte(`{"v":1,"op":"pause"}`), t0)
		want[id] = codecs.StatusPaused
	}
	for i := 5; i < 160; i += 13 {
		id := keys[i]
		env.Produce(string(env.Layout.Jobs()), id, []byte(`{"v":1,"op":"delete"}`), t0)
		want[id] = codecs.StatusDeleted
	}
	env.WaitApplied()

	record := func(id string) (*codecs.JobRecord, error) {
		st := inst.Scheduler().Store(topology.Partition(id, parts))
		if st == nil {
			return nil, errors.New("no store")
		}
		b, err := st.Get(id)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 { // a tombstone purged after its retention
			return &codecs.JobRecord{Status: codecs.StatusDeleted}, nil
		}
		return codecs.DecodeJobRecord(b)
	}
	// settled waits until every job has the status want says, then until
	// the fan-out and the commands it wrote are consumed, and checks again
	// (nothing else changed).
	check := func() error {
		for id, s := range want {
			rec, err := record(id)
			if err != nil {
				return err
			}
			if rec.Status != s {
				return fmt.Errorf("job %s is %s, want %s", id, rec.Status, s)
			}
		}
		return nil
	}
	shardKeys, err := topology.ShardKeys(parts)
	require.NoError(t, err)
	// finished waits until every shard has finished operation id and
	// returns the sums of its counts.
	finished := func(id string) (matched, changed int64) {
		testenv.Eventually(t, time.Minute, func() error {
			matched, changed = 0, 0
			for p, k := range shardKeys {
				b, err := inst.Scheduler().Store(int32(p)).Get(k)
				if err != nil {
					return err
				}
				sr, err := codecs.DecodeShardRecord(b)
				if err != nil {
					return err
				}
				r, ok := sr.Bulk.Finished(id)
				if !ok {
					return fmt.Errorf("partition %d has not finished %s", p, id)
				}
				matched, changed = matched+r.Matched, changed+r.Changed
			}
			return nil
		})
		return matched, changed
	}
	// send writes a bulk operation to chronos-bucket-triggers.
	send := func(bt codecs.BucketTrigger, actor string) {
		v, err := codecs.EncodeBucketTrigger(bt)
		require.NoError(t, err)
		r := &kgo.Record{Topic: string(env.Layout.BucketTriggers()), Key: []byte("k"), Value: v, Timestamp: t0.Add(time.Minute),
			Headers: []kgo.RecordHeader{{Key: codecs.ActorHeader, Value: []byte(actor)}}}
		require.NoError(t, env.Client.ProduceSync(context.Background(), r).FirstErr())
	}
	// run sends a bulk operation (after those in others), waits until every
	// shard has finished them and their commands are applied, checks every
	// job against the oracle and that the commands read are commands more
	// than the shards' counts of the operation; it returns the counts.
	run := func(bt codecs.BucketTrigger, actor string, others []codecs.BucketTrigger, commands int64) (matched, changed int64) {
		before := len(jobs.Commands())
		for _, o := range others {
			send(o, actor)
		}
		send(bt, actor)
		for _, o := range others {
			finished(o.TriggerID)
		}
		matched, changed = finished(bt.TriggerID)
		env.WaitApplied()
		require.NoError(t, check())
		testenv.Eventually(t, time.Minute, func() error {
			if n := int64(len(jobs.Commands()) - before); n != changed+commands {
				return fmt.Errorf("read %d commands, want %d", n, changed+commands)
			}
			return nil
		})
		return matched, changed
	}
	// select_ applies op to the oracle for the jobs sel picks and returns
	// how many it picks (not deleted) and changes.
	select_ := func(sel func(id string) bool, from []codecs.Status, to codecs.Status) (matched, changed int64) {
		for id, s := range want {
			if !sel(id) || s == codecs.StatusDeleted {
				continue
			}
			matched++
			for _, f := range from {
				if s == f {
					want[id] = to
					changed++
				}
			}
		}
		return matched, changed
	}
	inFleet := func(id string) bool { return bucket[id] == "fleet" }
	prefix := func(p string) func(string) bool { return func(id string) bool { return id[:len(p)] == p } }
	active, paused := codecs.StatusActive, codecs.StatusPaused

	// Pause the bucket "fleet": its active jobs, of both tenants.
	commandsBefore = len(jobs.Commands())
	wm, wc := select_(inFleet, []codecs.Status{active}, paused)
	m, c := run(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: "fleet", Note: "maintenance INC-7", TriggerID: "pause-fleet"}, "ops-token", nil, 0)
	require.Equal(t, [2]int64{wm, wc}, [2]int64{m, c}, "matched and changed")
	require.NotZero(t, c)
	for _, r := range jobs.Commands()[commandsBefore:] {
		rec, err := record(string(r.Key))
		require.NoError(t, err)
		// The command is conditional on the version the walk saw (the
		// pause made the next one).
		require.JSONEq(t, fmt.Sprintf(`{"v":1,"op":"pause","note":"maintenance INC-7","if_version":%d}`, rec.Version-1), string(r.Value))
		hdr := map[string]string{}
		for _, h := range r.Headers {
			hdr[h.Key] = string(h.Value)
		}
		require.Equal(t, "ops-token", hdr[codecs.ActorHeader])
		require.Regexp(t, `^[0-9a-f]{32} pause-fleet$`, hdr[codecs.BulkHeader])
		require.Equal(t, codecs.PauseNote{Note: "maintenance INC-7", By: "ops-token"}, rec.Pause)
	}

	// The same pause again (a new id): nothing left to change.
	wm, _ = select_(inFleet, nil, active)
	m, c = run(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: "fleet", TriggerID: "pause-fleet-2"}, "ops-token", nil, 0)
	require.Equal(t, [2]int64{wm, 0}, [2]int64{m, c})

	// A pause of the prefix "t1/" and at once a resume of it: each shard
	// runs them in order (the pause's later chunks never undo the
	// resume), so every live job of t1/ ends active; then the resume
	// redelivered changes nothing and keeps its counts.
	_, pausedT1 := select_(prefix("t1/"), []codecs.Status{active}, paused)
	wm, wc = select_(prefix("t1/"), []codecs.Status{paused}, active)
	resume := codecs.BucketTrigger{Op: codecs.BulkResume, Prefix: "t1/", TriggerID: "resume-t1"}
	m, c = run(resume, "ops-token", []codecs.BucketTrigger{{Op: codecs.BulkPause, Prefix: "t1/", TriggerID: "pause-t1"}}, pausedT1)
	require.Equal(t, [2]int64{wm, wc}, [2]int64{m, c})
	m, c = run(resume, "ops-token", nil, -wc)
	require.Equal(t, [2]int64{wm, wc}, [2]int64{m, c}, "a redelivered operation is not run again")
	rec, err := record("t1/job-001")
	require.NoError(t, err)
	require.Equal(t, codecs.PauseNote{}, rec.Pause, "a resume clears the note")

	// Delete the prefix "t0/": every live job of it; again: nothing.
	wm, wc = select_(prefix("t0/"), []codecs.Status{active, paused, codecs.StatusCompleted}, codecs.StatusDeleted)
	m, c = run(codecs.BucketTrigger{Op: codecs.BulkDelete, Prefix: "t0/", TriggerID: "delete-t0"}, "admin", nil, 0)
	require.Equal(t, [2]int64{wm, wc}, [2]int64{m, c})
	m, c = run(codecs.BucketTrigger{Op: codecs.BulkDelete, Prefix: "t0/", TriggerID: "delete-t0-again"}, "admin", nil, 0)
	require.Equal(t, [2]int64{0, 0}, [2]int64{m, c})

	// A bulk operation without a target is rejected; nothing else is.
	env.Produce(string(env.Layout.BucketTriggers()), "k", []byte(`{"v":1,"op":"delete"}`), t0)
	testenv.Eventually(t, time.Minute, func() error {
		if rejects.Len() != 1 {
			return fmt.Errorf("%d rejects, want 1", rejects.Len())
		}
		return nil
	})
	env.WaitConsumed(string(env.Layout.RouterGroup()), string(env.Layout.BucketTriggers()), time.Minute)
	require.Equal(t, 1, rejects.Len())
}

// TestBulkSurvivesHandover starts a bulk pause of a large bucket walked in
// tiny chunks, stops the instance while the shards walk, and starts
// another (with an empty disk: it restores the table and the walk's
// state from Kafka): every shard still finishes, every active job of
// the bucket ends paused and no other job changes, every such job was sent
// its command (a repeated chunk may send one twice, never a whole walk),
// and the shards' counts never exceed the jobs changed.
func TestBulkSurvivesHandover(t *testing.T) {
	t.Parallel()
	const parts, n = 4, 1200
	env := testenv.New(t, parts)
	jobs := env.Collect(string(env.Layout.Jobs()))
	cfg := env.Config()
	cfg.Fanout.ChunkSize = 2
	a := env.Start(cfg)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	var keys []string
	var values [][]byte
	want := map[string]bool{} // job -> paused by the bulk pause
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("h-%04d", i)
		b := []string{"big", "small"}[i%5/4]
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: b}))
		want[id] = b == "big"
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	before := len(jobs.Commands())
	v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: "big", TriggerID: "handover"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "big", v, t0.Add(time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if len(jobs.Commands()) < before+10 {
			return fmt.Errorf("%d commands so far", len(jobs.Commands())-before)
		}
		return nil
	})
	a.Stop()
	stopped := len(jobs.Commands()) - before
	t.Logf("first instance stopped after %d of the bulk commands", stopped)
	cfgB := env.Config()
	cfgB.Fanout.ChunkSize = 2
	b := env.Start(cfgB)

	shardKeys, err := topology.ShardKeys(parts)
	require.NoError(t, err)
	var changed int64
	testenv.Eventually(t, 2*time.Minute, func() error {
		changed = 0
		for p, k := range shardKeys {
			st := b.Scheduler().Store(int32(p))
			if st == nil {
				return fmt.Errorf("partition %d not open on the second instance", p)
			}
			raw, err := st.Get(k)
			if err != nil {
				return err
			}
			sr, err := codecs.DecodeShardRecord(raw)
			if err != nil {
				return err
			}
			r, ok := sr.Bulk.Finished("handover")
			if !ok {
				return fmt.Errorf("partition %d has not finished", p)
			}
			changed += r.Changed
		}
		return nil
	})
	env.WaitApplied()
	testenv.Eventually(t, time.Minute, func() error {
		for id, paused := range want {
			raw, err := b.Scheduler().Store(topology.Partition(id, parts)).Get(id)
			if err != nil {
				return err
			}
			rec, err := codecs.DecodeJobRecord(raw)
			if err != nil {
				return err
			}
			if (rec.Status == codecs.StatusPaused) != paused {
				return fmt.Errorf("job %s is %s", id, rec.Status)
			}
		}
		return nil
	})
	sent := map[string]int{}
	for _, r := range jobs.Commands()[before:] {
		require.Regexp(t, `^\{"v":1,"op":"pause","if_version":[0-9]+\}$`, string(r.Value))
		sent[string(r.Key)]++
	}
	var total, expected int
	for id, paused := range want {
		if paused {
			expected++
			require.NotZero(t, sent[id], "job %s was sent no pause", id)
		} else {
			require.Zero(t, sent[id], "job %s is not in the bucket", id)
		}
		total += sent[id]
	}
	t.Logf("%d jobs, %d commands, shards count %d", expected, total, changed)
	require.Less(t, stopped, expected, "the first instance stopped mid-walk")
	require.Less(t, total, 2*expected, "a handover repeats at most a chunk, not the walk")
	require.LessOrEqual(t, changed, int64(expected))
	require.Positive(t, changed)
}

// TestBulkQueueFull sends 17 bulk operations at once to a one-partition
// scheduler walking in chunks of one key: the shard queues 16 and rejects
// the 17th (a clear reject, nothing half-applied on this shard); the 16,
// alternately pause and resume, run in order, each after the commands of
// the one before are applied, so each changes every job (the last, a
// resume, wins); sent again with the same trigger id after the queue
// drained, the 17th (a pause) runs and pauses every job.
func TestBulkQueueFull(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	rejects := env.Collect(string(env.Layout.Rejects()))
	cfg := env.Config()
	cfg.Fanout.ChunkSize = 1
	inst := env.Start(cfg)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var keys []string
	var values [][]byte
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("q-%03d", i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "q"}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	var tk []string
	var tv [][]byte
	for i := 1; i <= codecs.MaxBulkQueued+1; i++ {
		op := []string{codecs.BulkResume, codecs.BulkPause}[i%2] // op-01 pauses, op-02 resumes, ...
		v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: op, Bucket: "q", TriggerID: fmt.Sprintf("op-%02d", i)})
		require.NoError(t, err)
		tk, tv = append(tk, "q"), append(tv, v)
	}
	env.ProduceMany(string(env.Layout.BucketTriggers()), tk, tv, t0.Add(time.Minute))
	shard := func() codecs.ShardRecord {
		keys, err := topology.ShardKeys(1)
		require.NoError(t, err)
		raw, err := inst.Scheduler().Store(0).Get(keys[0])
		require.NoError(t, err)
		sr, err := codecs.DecodeShardRecord(raw)
		require.NoError(t, err)
		return sr
	}
	testenv.Eventually(t, time.Minute, func() error {
		if rejects.Len() != 1 {
			return fmt.Errorf("%d rejects", rejects.Len())
		}
		return nil
	})
	rj, err := codecs.DecodeReject(rejects.Records()[0].Value)
	require.NoError(t, err)
	require.Contains(t, rj.Reason, "bulk operations queued")
	last := fmt.Sprintf("op-%02d", codecs.MaxBulkQueued+1)
	// 16 walks of 300 jobs, one key a chunk, each job's command applied
	// before the next walk: ~10,000 inputs, which the race detector on 2
	// shared cores took more than 2 minutes for (a local CI run, stop 37:
	// 2 still queued).
	testenv.Eventually(t, 6*time.Minute, func() error {
		sr := shard()
		if len(sr.Bulk.Queue) > 0 {
			return fmt.Errorf("%d queued", len(sr.Bulk.Queue))
		}
		return nil
	})
	sr := shard()
	for i := 1; i <= codecs.MaxBulkQueued; i++ {
		r, ok := sr.Bulk.Finished(fmt.Sprintf("op-%02d", i))
		require.True(t, ok, "op %d", i)
		require.Equal(t, int64(300), r.Changed, "op %d: each op flips every job (they run in order)", i)
	}
	_, ok := sr.Bulk.Finished(last)
	require.False(t, ok, "the rejected one did not run")
	status := func(want codecs.Status) func() error {
		return func() error {
			for _, id := range keys {
				raw, err := inst.Scheduler().Store(0).Get(id)
				if err != nil {
					return err
				}
				rec, err := codecs.DecodeJobRecord(raw)
				if err != nil {
					return err
				}
				if rec.Status != want {
					return fmt.Errorf("job %s is %s", id, rec.Status)
				}
			}
			return nil
		}
	}
	env.WaitApplied()
	require.NoError(t, status(codecs.StatusActive)())
	env.Produce(string(env.Layout.BucketTriggers()), "q", tv[len(tv)-1], t0.Add(2*time.Minute))
	testenv.Eventually(t, 2*time.Minute, func() error {
		if _, ok := shard().Bulk.Finished(last); !ok {
			return fmt.Errorf("%s not finished", last)
		}
		return nil
	})
	env.WaitApplied()
	testenv.Eventually(t, time.Minute, status(codecs.StatusPaused))
}

// TestBulkOrderWithOneKey: a pause of bucket "o" and then a resume of
// prefix "o-" (the same jobs), written with one key (codecs.BulkKey, as the
// HTTP API and the CLI write every bulk operation), with 3,000 records of
// other producers ahead of them on that partition, leave every job active.
// Adversary 14 found the API keyed each operation by its target: the two
// landed on two partitions, every shard ran the resume first, and 40 of 40
// jobs ended paused (docs/topics.md, "Bulk operations", Key).
func TestBulkOrderWithOneKey(t *testing.T) {
	t.Parallel()
	const parts, n = 2, 40
	env := testenv.New(t, parts)
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	bucket, prefix := "o", "o-"
	// Keyed by their targets, the two operations would land on two
	// partitions, which Kafka does not order.
	require.NotEqual(t, topology.Partition(bucket, parts), topology.Partition(prefix, parts), "precondition: two partitions")
	var keys []string
	var values [][]byte
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("o-%03d", i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: bucket}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	// Other producers' records ahead of the pause on its partition.
	var bk []string
	var bv [][]byte
	for i := 0; i < 3000; i++ {
		bk, bv = append(bk, codecs.BulkKey), append(bv, []byte(`{"v":1,"op":"fire"}`))
	}
	env.ProduceMany(string(env.Layout.BucketTriggers()), bk, bv, t0)
	pause, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: bucket, TriggerID: "pause-o"})
	require.NoError(t, err)
	resume, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkResume, Prefix: prefix, TriggerID: "resume-o"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), codecs.BulkKey, pause, t0.Add(time.Minute))
	env.Produce(string(env.Layout.BucketTriggers()), codecs.BulkKey, resume, t0.Add(2*time.Minute))
	shardKeys, err := topology.ShardKeys(parts)
	require.NoError(t, err)
	testenv.Eventually(t, 2*time.Minute, func() error {
		for p, k := range shardKeys {
			raw, err := inst.Scheduler().Store(int32(p)).Get(k)
			if err != nil {
				return err
			}
			sr, err := codecs.DecodeShardRecord(raw)
			if err != nil {
				return err
			}
			for _, id := range []string{"pause-o", "resume-o"} {
				if _, ok := sr.Bulk.Finished(id); !ok {
					return fmt.Errorf("partition %d has not finished %s", p, id)
				}
			}
		}
		return nil
	})
	env.WaitApplied()
	var paused int
	for _, id := range keys {
		raw, err := inst.Scheduler().Store(topology.Partition(id, parts)).Get(id)
		require.NoError(t, err)
		rec, err := codecs.DecodeJobRecord(raw)
		require.NoError(t, err)
		if rec.Status == codecs.StatusPaused {
			paused++
		}
	}
	require.Zero(t, paused, "jobs paused by a pause sent before the resume of the same jobs")
}

// bulkEnv starts a one-partition scheduler walking bulk operations one key
// per chunk over n jobs of bucket b (ids b-0000...), so that a walk lasts
// n loopback round trips, and returns the env, the instance's record and
// shard-record readers.
func bulkEnv(t *testing.T, b string, n int) (*testenv.Env, func(id string) *codecs.JobRecord, func() codecs.ShardRecord, time.Time) {
	env := testenv.New(t, 1)
	cfg := env.Config()
	cfg.Fanout.ChunkSize = 1
	inst := env.Start(cfg)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	var keys []string
	var values [][]byte
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-%04d", b, i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: b}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	record := func(id string) *codecs.JobRecord {
		raw, err := inst.Scheduler().Store(0).Get(id)
		require.NoError(t, err)
		rec, err := codecs.DecodeJobRecord(raw)
		require.NoError(t, err)
		return rec
	}
	shardKeys, err := topology.ShardKeys(1)
	require.NoError(t, err)
	shard := func() codecs.ShardRecord {
		raw, err := inst.Scheduler().Store(0).Get(shardKeys[0])
		require.NoError(t, err)
		sr, err := codecs.DecodeShardRecord(raw)
		require.NoError(t, err)
		return sr
	}
	return env, record, shard, t0
}

// TestBulkReusedTriggerIDIsRejected: a bulk record whose trigger_id a
// shard remembers is skipped whatever its op and target, without a word:
// a resume (or a delete, or another bucket) sent under the id of a
// finished pause is dropped by every shard, nothing goes to
// chronos-rejects, POST /v1/buckets/{b}/resume with that trigger_id
// answers 202 {"op":"resume"}, and GET /v1/bulk/{id} (and `chronos jobs
// bulk resume --trigger-id ID --wait`) then reports done with the pause's
// op and counts. The jobs stay paused.
//
// The promise (standards, docs/topics.md input policy): bad input
// always gets a clear error; a record that cannot be applied goes to
// chronos-rejects with the reason. A record that repeats a remembered
// operation (same op, bucket, prefix, note) is a redelivery and is rightly
// skipped; one that names a different operation is a conflict.
func TestBulkReusedTriggerIDIsRejected(t *testing.T) {
	t.Parallel()
	const n = 20
	env, record, shard, t0 := bulkEnv(t, "u", n)
	rejects := env.Collect(string(env.Layout.Rejects()))
	send := func(op string, at time.Time) {
		v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: op, Bucket: "u", TriggerID: "maint"})
		require.NoError(t, err)
		env.Produce(string(env.Layout.BucketTriggers()), "u", v, at)
	}
	send(codecs.BulkPause, t0.Add(time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if _, ok := shard().Bulk.Finished("maint"); !ok {
			return fmt.Errorf("the pause has not finished")
		}
		return nil
	})
	send(codecs.BulkResume, t0.Add(2*time.Minute))
	env.WaitConsumed(string(env.Layout.RouterGroup()), string(env.Layout.BucketTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	env.WaitApplied()
	var active int
	for i := 0; i < n; i++ {
		if record(fmt.Sprintf("u-%04d", i)).Status == codecs.StatusActive {
			active++
		}
	}
	require.Zero(t, active, "a resume under a finished pause's trigger id ran")
	testenv.Eventually(t, time.Minute, func() error {
		for _, r := range rejects.Records() {
			if strings.Contains(string(r.Value), "already names another bulk operation") {
				return nil
			}
		}
		return fmt.Errorf("no reject for the reused trigger id (%d rejects)", rejects.Len())
	})
}

// TestBulkResentWhileInProgress (adversary 14 found it failing; fixed by numbering the walk's steps in
// the shard record's queue head): the same bulk record sent again (same
// trigger_id: an HTTP client's retry of POST /v1/buckets/{b}/pause with
// its trigger_id, or "send the same record again" after a queue-full
// reject) while a shard is still walking it was not skipped: bulkEnqueue
// looped back the queued operation from the start (AfterKey "", counts 0)
// beside the walk already running, so the shard walked the bucket a second
// time. A job the user resumed after the first walk had paused it (a
// command sent meanwhile, applied in its own order) was paused again by the
// second walk, with no new operation sent.
//
// The promises (docs/topics.md "Bulk operations"): "A record with a
// trigger_id a shard still remembers as queued or finished is not run
// again"; "Jobs put into the target after a shard has walked past them
// are not affected; commands a user sends meanwhile apply in their own
// order"; "a crash or a rebalance repeats at most one chunk" (the same
// in-progress re-loop ran on a redelivered shard trigger after a crash).
func TestBulkResentWhileInProgress(t *testing.T) {
	t.Parallel()
	const n = 2000
	env, record, shard, t0 := bulkEnv(t, "r", n)
	pauses := env.Collect(string(env.Layout.Jobs()))
	v := resumeBehindPauseWalk(t, env, record, shard, "r", "r-0000", t0)
	// The same operation again, while the shard still walks it.
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
	for _, r := range pauses.Commands() {
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

// TestBulkReplayedContinuationRunsNoChunkTwice (adversary 14 found it failing; fixed by numbering the walk's steps in
// the shard record's queue head): a bulk walk's continuation (a
// loopback keyed by the shard key) handled again, as goka hands it over
// again after a crash or a rebalance when its offset was not yet committed
// (commits lag the callbacks), was not recognised as old: bulkRun checked
// only that its trigger id was the one in progress, not its cursor, so the
// replayed continuation started a second chain that walked every key after
// its cursor again. Here one continuation of the first chunk is replayed
// after the user resumed a job the walk had passed: the job must stay
// active.
//
// The promises (docs/topics.md "Bulk operations"): "a crash or a
// rebalance repeats at most one chunk, whose jobs already changed are
// skipped"; "commands a user sends meanwhile apply in their own order".
func TestBulkReplayedContinuationRunsNoChunkTwice(t *testing.T) {
	t.Parallel()
	const n = 2000
	env, record, shard, t0 := bulkEnv(t, "c", n)
	cmds := env.Collect(string(env.Layout.Jobs()))
	resumeBehindPauseWalk(t, env, record, shard, "c", "c-0005", t0)
	// The continuation the first chunk wrote (step 1, cursor c-0000,
	// counts 1/1), handed over again.
	shardKeys, err := topology.ShardKeys(1)
	require.NoError(t, err)
	again := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBulk, T: t0.Add(time.Minute), Op: codecs.BulkPause,
		Bucket: "c", TriggerID: "p1", AfterKey: "c-0000", Matched: 1, Changed: 1, Step: 1})
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
	for _, r := range cmds.Commands() {
		if strings.Contains(string(r.Value), `"op":"pause"`) {
			sent++
		}
	}
	t.Logf("%d pause commands for %d jobs", sent, n)
	require.Equal(t, codecs.StatusActive, record("c-0005").Status,
		"a job resumed after the walk passed it was paused again by a replayed continuation")
	require.LessOrEqual(t, sent, n+1, "a replayed continuation repeats at most one chunk (of one key)")
}

// resumeBehindPauseWalk sends a pause of bucket b (trigger id "p1", walked
// one key per chunk by bulkEnv's instance), waits until the walk has
// paused job id, resumes id as a user would, waits until it is active, and
// checks the walk is still in progress; it returns the pause's record.
func resumeBehindPauseWalk(t *testing.T, env *testenv.Env, record func(string) *codecs.JobRecord, shard func() codecs.ShardRecord, b, id string, t0 time.Time) []byte {
	t.Helper()
	v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkPause, Bucket: b, TriggerID: "p1"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), b, v, t0.Add(time.Minute))
	for _, want := range []codecs.Status{codecs.StatusPaused, codecs.StatusActive} {
		testenv.Eventually(t, time.Minute, func() error {
			if s := record(id).Status; s != want {
				return fmt.Errorf("%s is %s, want %s", id, s, want)
			}
			return nil
		})
		if want == codecs.StatusPaused {
			// The user resumes the job, which the walk has passed.
			env.Produce(string(env.Layout.Jobs()), id, []byte(`{"v":1,"op":"resume"}`), t0.Add(2*time.Minute))
		}
	}
	require.True(t, shard().Bulk.Queued("p1"), "precondition: p1 still in progress (make n larger)")
	return v
}

// TestBulkForgedBarrierIsRejected (adversary 14's TestAdv14ForgedBarrier,
// failing before barriers carried their operation's nonce): anyone with
// Write on chronos-jobs can write a record under a shard key (the shard
// keys are public and deterministic) whose value is the in-progress
// operation's internal record with counts of their choosing. Taken as the
// barrier, it recorded the operation finished with the forged counts and
// dropped the rest of the walk, so most of the bucket stayed active while
// GET /v1/bulk/{id} said done. Now the barrier must carry the nonce the
// shard drew when it queued the operation (kept in its table, never in a
// continuation): the forgery goes to chronos-rejects (reserved_id) and
// changes nothing; the walk finishes with the shard's own counts.
func TestBulkForgedBarrierIsRejected(t *testing.T) {
	t.Parallel()
	const n = 2000
	env, record, shard, t0 := bulkEnv(t, "f", n)
	rejects := env.Collect(string(env.Layout.Rejects()))
	loop := env.Collect(string(env.Layout.SchedulerLoop()))
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
	// Two forgeries: one as the walk's own record (no nonce), one with a
	// guessed nonce and Walked set.
	for _, nonce := range []string{"", "00000000000000000000000000000000"} {
		forged := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBulk, T: t0.Add(time.Minute), Op: codecs.BulkPause,
			Bucket: "f", TriggerID: "p1", Matched: 7, Changed: 7, Walked: nonce != "", Nonce: nonce})
		env.Produce(string(env.Layout.Jobs()), shardKeys[0], forged, t0.Add(time.Minute))
	}
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
	testenv.Eventually(t, time.Minute, func() error {
		var forged int
		for _, r := range rejects.Records() {
			if strings.Contains(string(r.Value), `"code":"reserved_id"`) && strings.Contains(string(r.Value), "secret") {
				forged++
			}
		}
		if forged != 2 {
			return fmt.Errorf("%d rejects of forged barriers, want 2 (%d rejects)", forged, rejects.Len())
		}
		return nil
	})
	// The secret never travels in a continuation.
	for _, r := range loop.Records() {
		require.NotContains(t, string(r.Value), `"nonce"`, "a loopback carries the operation's nonce")
	}
}

// TestBulkDeleteLosesToARePut: a bulk delete's commands carry the version
// the walk saw (if_version), so a user's put of the same id applied
// between the walk and the command wins: the new job stays, and the lost
// command is counted as skipped in the shard's counts, not rejected.
// Before, the delete removed the job just put. The interleaving is
// generated: seeded random jobs are put again, in seeded random bursts,
// while the shard walks the bucket one key per chunk, so the puts queue on
// chronos-jobs between the walk's reads and its commands. The oracle
// replays chronos-jobs in offset order with the scheduler's version rules
// (a put of a live job: +1; of a deleted one: after the tombstone; a
// conditional delete applies only at its if_version) and must agree with
// every job's final record and with the shard's changed and skipped
// counts. A command with a chronos-bulk header whose MAC is not the
// operation's is an ordinary command: its conflict is rejected.
func TestBulkDeleteLosesToARePut(t *testing.T) {
	t.Parallel()
	const n = 1000
	env, record, shard, t0 := bulkEnv(t, "d", n)
	jobs := env.Collect(string(env.Layout.Jobs()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 14))
	version := map[string]uint64{}
	id := func(i int) string { return fmt.Sprintf("d-%04d", i) }
	for i := 0; i < n; i++ {
		version[id(i)] = record(id(i)).Version
	}
	testenv.Eventually(t, time.Minute, func() error {
		if got := len(jobs.Commands()); got != n {
			return fmt.Errorf("read %d of the %d puts", got, n)
		}
		return nil
	})
	start := n
	v, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Op: codecs.BulkDelete, Bucket: "d", TriggerID: "del"})
	require.NoError(t, err)
	env.Produce(string(env.Layout.BucketTriggers()), "d", v, t0.Add(time.Minute))
	testenv.Eventually(t, time.Minute, func() error {
		if s := record(id(0)).Status; s != codecs.StatusDeleted {
			return fmt.Errorf("%s is %s: the walk has not started", id(0), s)
		}
		return nil
	})
	// Bursts of puts of random jobs (some more than once) just ahead of
	// the walk's cursor, each behind a backlog of puts of other jobs, so
	// that the walk reads jobs whose new put is already on chronos-jobs
	// ahead of its command but not yet applied.
	filler, injected := 0, int64(0)
	for burst := 0; burst < 6; burst++ {
		var keys []string
		var values [][]byte
		for j := 0; j < 1000+rng.IntN(3000); j++ {
			k := fmt.Sprintf("x-%06d", filler)
			filler++
			keys, values = append(keys, k), append(values, testenv.PutCommand(k, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "x"}))
		}
		cursor := 0
		if q := shard().Bulk.Queue; len(q) > 0 && q[0].AfterKey != "" {
			_, err := fmt.Sscanf(q[0].AfterKey, "d-%04d", &cursor)
			require.NoError(t, err)
		}
		for j := 0; j < 20+rng.IntN(40); j++ {
			k := id(min(n-1, cursor+1+rng.IntN(150)))
			keys, values = append(keys, k), append(values, testenv.PutCommand(k, codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "d"}))
		}
		env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0.Add(time.Minute))
		if burst == 1 {
			// The race made certain: id(0) was deleted by the walk at the
			// version it saw, is put again, and the walk's command for
			// that version (MAC and all, as the walk writes it) arrives
			// after the put, as when the walk reads a job just before a
			// put is applied. It must lose, counted as skipped.
			q := shard().Bulk.Queue
			require.NotEmpty(t, q)
			env.Produce(string(env.Layout.Jobs()), id(0), testenv.PutCommand(id(0), codecs.JobDef{Cron: "0 0 1 1 *", Bucket: "d"}), t0.Add(time.Minute))
			v0 := version[id(0)]
			cmd, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpDelete, IfVersion: &v0})
			require.NoError(t, err)
			r := &kgo.Record{Topic: string(env.Layout.Jobs()), Key: []byte(id(0)), Value: cmd, Timestamp: t0.Add(time.Minute),
				Headers: []kgo.RecordHeader{{Key: codecs.BulkHeader, Value: []byte(codecs.BulkMAC(q[0].Nonce, "del", id(0), v0) + " del")}}}
			require.NoError(t, env.Client.ProduceSync(context.Background(), r).FirstErr())
			injected++
		}
		if burst == 2 {
			// A forged bulk header on a conflicting command.
			r := &kgo.Record{Topic: string(env.Layout.Jobs()), Key: []byte(id(0)), Value: []byte(`{"v":1,"op":"pause","if_version":999999}`),
				Timestamp: t0.Add(time.Minute), Headers: []kgo.RecordHeader{{Key: codecs.BulkHeader, Value: []byte("00000000000000000000000000000000 del")}}}
			require.NoError(t, env.Client.ProduceSync(context.Background(), r).FirstErr())
		}
	}
	var res codecs.BulkResult
	testenv.Eventually(t, 2*time.Minute, func() error {
		var ok bool
		if res, ok = shard().Bulk.Finished("del"); !ok {
			return fmt.Errorf("del not finished")
		}
		return nil
	})
	env.WaitApplied()
	// The oracle: chronos-jobs replayed in order.
	live := map[string]bool{}
	for k := range version {
		live[k] = true
	}
	var changed, skipped int64
	var recs []*kgo.Record
	testenv.Eventually(t, time.Minute, func() error {
		recs = jobs.Commands()[start:]
		var bulk int64
		for _, r := range recs {
			if len(r.Headers) > 0 && strings.Contains(string(r.Value), `"op":"delete"`) {
				bulk++
			}
		}
		if bulk != res.Changed+injected {
			return fmt.Errorf("read %d bulk deletes, the shard wrote %d", bulk, res.Changed)
		}
		return nil
	})
	for _, r := range recs {
		k := string(r.Key)
		if _, ok := version[k]; !ok {
			continue // another bucket's backlog
		}
		var c codecs.CommandMsg
		require.NoError(t, json.Unmarshal(r.Value, &c))
		switch {
		case c.Op == codecs.OpPut:
			if live[k] {
				version[k]++
			} else {
				version[k] = max(uint64(r.Offset)+1, version[k]+1)
			}
			live[k] = true
		case c.Op == codecs.OpDelete:
			require.NotNil(t, c.IfVersion, "a bulk command carries if_version")
			require.Equal(t, codecs.BulkHeader, r.Headers[0].Key)
			changed++
			if live[k] && version[k] == *c.IfVersion {
				live[k], version[k] = false, version[k]+1
			} else {
				skipped++
			}
		}
	}
	for i := 0; i < n; i++ {
		rec := record(id(i))
		require.Equal(t, live[id(i)], rec.Status != codecs.StatusDeleted, "job %s", id(i))
		require.Equal(t, version[id(i)], rec.Version, "job %s", id(i))
	}
	t.Logf("%d bulk deletes, %d lost to a put (%d injected)", changed, skipped, injected)
	require.Equal(t, [3]int64{n, changed - injected, skipped}, [3]int64{res.Matched, res.Changed, res.Skipped})
	require.GreaterOrEqual(t, skipped, injected)
	testenv.Eventually(t, time.Minute, func() error {
		for _, r := range rejects.Records() {
			if strings.Contains(string(r.Value), `"code":"version_conflict"`) {
				return nil
			}
		}
		return fmt.Errorf("the forged bulk command was not rejected (%d rejects)", rejects.Len())
	})
}
