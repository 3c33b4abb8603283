package processors_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestAdv11CommandTimestamps: a finding of the issue 11 adversary, fixed
// in scheduler.decodeCommand (it failed before).
//
// Valid commands on chronos-jobs stamped without a timestamp (-1, read as
// the zero time, which Chronos reserves for "not set") or after year 9999
// (which RFC 3339 and JSON cannot write) are applied: a manual fire then
// dispatches an event whose scheduled_at ("12000-01-01T00:00:00Z") no
// RFC 3339 parser reads, so the consumers' decoding fails on it, and a put
// stores a job created at 0001-01-01 that owes every fire since year 1.
// Promise (issue 11: any record ends applied or as a reject, and bad input
// gets a clear error; docs/topics.md: scheduled_at is RFC 3339). Such a
// command is now rejected with invalid_timestamp, as the router does for
// bucket triggers.
func TestAdv11CommandTimestamps(t *testing.T) {
	t.Parallel()
	const partitions = 2
	env := testenv.New(t, partitions)
	adv11RaiseTimestampLimits(t, env)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("j", codecs.JobDef{Every: "1h"}, t0)
	env.WaitApplied()
	raw := adv11RawClient(t, env)
	jobs := string(env.Layout.Jobs())
	_, err := adv11RawProduce(t, raw, jobs, topology.Partition("j", partitions), []byte("j"),
		[]byte(`{"v":1,"op":"fire","trigger_id":"after-9999"}`), time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	require.NoError(t, err)
	_, err = adv11RawProduce(t, raw, jobs, topology.Partition("k", partitions), []byte("k"),
		[]byte(`{"v":1,"op":"put","job":{"every":"1s"}}`), -1)
	require.NoError(t, err)
	env.WaitApplied()
	// Wait until the fire went out or both commands were rejected.
	rejected := func() int {
		n := 0
		for _, rec := range rejects.Records() {
			if rj, err := codecs.DecodeReject(rec.Value); err == nil && rj.Code == codecs.CodeInvalidTimestamp {
				n++
			}
		}
		return n
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		for _, r := range dispatch.Records() {
			if string(r.Key) == "j" && strings.Contains(string(r.Value), "after-9999") {
				return nil
			}
		}
		if rejected() == 2 {
			return nil
		}
		return fmt.Errorf("neither fired nor rejected")
	})
	var problems []string
	for _, r := range dispatch.Records() {
		if _, err := codecs.DecodeDispatch(r.Value); err != nil {
			problems = append(problems, fmt.Sprintf("an event consumers cannot read (%v): %s", err, r.Value))
		}
	}
	if v, err := inst.Scheduler().Store(topology.Partition("k", partitions)).Get("k"); err != nil || v != nil {
		rec, _ := codecs.DecodeJobRecord(v)
		problems = append(problems, fmt.Sprintf("a put without a timestamp was stored (err %v): created %v", err, rec.CreatedAt))
	}
	if n := rejected(); n != 2 {
		problems = append(problems, fmt.Sprintf("%d invalid_timestamp rejects, want 2", n))
	}
	require.Empty(t, problems)
}

// TestAdv11MalformedTableRecord: a finding of the issue 11 adversary,
// fixed in the scheduler (decodeShard; it failed before).
//
// docs/security.md (threat model) said malformed records on the internal
// topics, the table topics included, are rejected. The table topic is not
// an input: an instance restores it into its store. Undecodable job
// records are logged and skipped ("undecodable job record; it will not
// fire"), but one undecodable shard record under a shard key ("S\xff")
// fails the partition's setup (the indexer returns the decode error): the
// scheduler group restarts forever with backoff, /readyz answers 503 and
// that partition's jobs never fire again, on every instance that restores
// it. Anyone with Write on chronos-scheduler-table can do this (the ACLs of
// docs/security.md give it only to Chronos). A fix belongs in
// processors/scheduler (the indexer: log and ignore an undecodable shard
// record, and treat the shard as starting from its next advance) or in the
// store's restore.
func TestAdv11MalformedTableRecord(t *testing.T) {
	t.Parallel()
	const partitions = 2
	env := testenv.New(t, partitions)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	a := env.Start(env.Config())
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const job = "every-second"
	p := topology.Partition(job, partitions)
	env.Put(job, codecs.JobDef{Every: "1s"}, t0)
	env.WaitApplied()
	a.Stop()
	shardKeys, err := topology.ShardKeys(partitions)
	require.NoError(t, err)
	cl := manualClient(t, env)
	tbl := string(env.Layout.SchedulerTable())
	for _, r := range []*kgo.Record{
		{Topic: tbl, Partition: p, Key: []byte(keyOn("junk", p, partitions)), Value: []byte("junk")},
		{Topic: tbl, Partition: p, Key: []byte(shardKeys[p]), Value: []byte("S\xff")},
	} {
		require.NoError(t, cl.ProduceSync(context.Background(), r).FirstErr())
	}
	inst := env.Start(env.Config()) // a new instance restores the table
	ready := watchReady(t, inst.Ready)
	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		env.Tick(at)
		want := codecs.ScheduledFireID(job, at)
		testenv.Eventually(t, 30*time.Second, func() error {
			for _, d := range dispatch.Dispatches(t) {
				if d.FireID == want {
					return nil
				}
			}
			return fmt.Errorf("no fire %s", want)
		})
	}
	require.NoError(t, ready(), "the instance must stay ready")
}
