package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/history"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdversary13bFarFutureBucketTriggersFreezeHistory: round 1's fix
// (then codecs.ResultMaxAhead) guarded results only. A bucket trigger record
// whose timestamp is far ahead becomes every event's scheduled_at
// (router: "The record time becomes the shard trigger's T and every
// event's scheduled_at"), and the history keeps fires by scheduled_at: 3
// triggers stamped year 2200 hold every slot of every job of the bucket.
//
// Promise (issue 13): "keeping per job the last N fires"; docs/topics.md
// (Results): "a report further ahead (a wrong clock) would hold a slot of
// the job's last fires until real fires passed it" -- the fix of round 1
// exists for exactly this, but a dispatch event can carry the same time.
//
// Reproduction: --history-fires 3; job "bucketed" every 1s in bucket "b";
// 3 records on chronos-bucket-triggers for "b" with timestamp
// 2200-12-31T23:59:5xZ (a producer with a wrong clock); then the job fires
// 5 times on schedule and each fire is reported succeeded.
//
// Observed: the triggers are accepted and dispatched; GET fires holds only
// the 3 fires of year 2200: none of the 5 later fires is ever shown again.
func TestAdversary13bFarFutureBucketTriggersFreezeHistory(t *testing.T) {
	const keep = 3
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.History.Fires = keep
	env.Start(cfg)
	view := historyView(t, env)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("bucketed", codecs.JobDef{Every: "1s", Bucket: "b"}, t0)
	env.WaitApplied()
	for i := range keep {
		trig, err := codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "b", TriggerID: "wrong-clock-" + string(rune('a'+i))})
		require.NoError(t, err)
		env.ProduceFuture(string(env.Layout.BucketTriggers()), "b", trig, time.Date(2200, 12, 31, 23, 59, 50+i, 0, time.UTC))
	}
	dispatch.WaitLen(t, keep, time.Minute)
	for s := 1; s <= 5; s++ {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	dispatch.WaitLen(t, keep+5, time.Minute)
	var scheduled int
	for _, d := range dispatch.Dispatches(t) {
		if d.Trigger != codecs.TriggerSchedule {
			t.Logf("bucket fire %s scheduled_at %s", d.FireID, d.ScheduledAt.Format(time.RFC3339))
			continue
		}
		scheduled++
		env.Produce(string(env.Layout.Results()), "bucketed", encodeResult(t, codecs.Result{JobID: "bucketed", Suffix: d.FireID[len(d.JobID)+1:],
			ScheduledAt: d.ScheduledAt, Attempt: 1, Status: codecs.StatusSucceeded, FinishedAt: d.ScheduledAt.Add(time.Second)}), t0.Add(6*time.Second))
	}
	require.Equal(t, 5, scheduled)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Results()), time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Dispatch()), time.Minute)
	time.Sleep(time.Second) // the view
	fires, _, err := view.Get("bucketed")
	require.NoError(t, err)
	var real, phantom []string
	for _, f := range fires {
		if f.ScheduledAt.Year() > 2100 {
			phantom = append(phantom, f.FireID)
		} else {
			real = append(real, f.FireID+" "+f.Status)
		}
	}
	require.NotEmpty(t, real, "after 5 scheduled fires, each reported succeeded, the job's history holds none of them, only %d bucket fires of year 2200: %v",
		len(phantom), phantom)
}

// TestAdversary13bTriggeredFireResultWithOtherScheduledAtSplitsTheFire:
// round 1 fixed the split of a scheduled fire by another spelling of its
// time; a manual (or bucket) fire's result is checked for nothing against
// its fire: any scheduled_at is accepted and lands as a second fire.
//
// Promise (docs/topics.md, Results): "`scheduled_at` | RFC 3339, required |
// the dispatch event's `scheduled_at`"; "A record that breaks any of these
// rules is rejected to `chronos-rejects`"; issue 13: per job the last N
// fires with their outcome (one entry per fire).
//
// Reproduction: job "manual" fired by a fire command (trigger_id "m1") at
// 2026-06-01T00:00:00.123Z; the executor reports it succeeded with fire_id
// "manual@m1" and scheduled_at 2026-06-01T00:00:00Z (its clock library
// keeps seconds; or it reports its own start time).
//
// Observed: no reject; GET fires shows 2 entries with fire_id manual@m1:
// the dispatched one without an outcome, and a phantom "succeeded" one
// without a dispatch time.
func TestAdversary13bTriggeredFireResultWithOtherScheduledAtSplitsTheFire(t *testing.T) {
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	env.Start(env.Config())
	view := historyView(t, env)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("manual", codecs.JobDef{At: "2027-01-01T00:00:00Z"}, t0)
	env.WaitApplied()
	env.Produce(string(env.Layout.Jobs()), "manual", []byte(`{"v":1,"op":"fire","trigger_id":"m1"}`), t0.Add(123*time.Millisecond))
	dispatch.WaitLen(t, 1, time.Minute)
	d := dispatch.Dispatches(t)[0]
	require.Equal(t, "manual@m1", d.FireID)
	t.Logf("dispatched %s scheduled_at %s", d.FireID, d.ScheduledAt.Format(time.RFC3339Nano))

	res := `{"v":1,"fire_id":"manual@m1","scheduled_at":"2026-06-01T00:00:00Z","status":"succeeded","finished_at":"2026-06-01T00:00:02Z"}`
	env.Produce(string(env.Layout.Results()), "manual", []byte(res), t0.Add(2*time.Second))
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Results()), time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Dispatch()), time.Minute)
	time.Sleep(time.Second) // the view
	if rejects.Len() > 0 {
		return // rejected: the promise holds
	}
	fires, _, err := view.Get("manual")
	require.NoError(t, err)
	for _, f := range fires {
		t.Logf("fire %s scheduled_at %s dispatched %v status %q", f.FireID, f.ScheduledAt.Format(time.RFC3339Nano), f.DispatchedAt != nil, f.Status)
	}
	require.Len(t, fires, 1, "one manual fire and one result for its fire_id, accepted, show as %d fires", len(fires))
	require.Equal(t, codecs.StatusSucceeded, fires[0].Status)
}

// TestAdversary13bLongDerivedTriggerIDOverflowsTheRecord: a result's
// fire_id of the derived form "m-<p>-<o>" is matched by a regexp without a
// length bound, so a well-formed 16 KiB result keeps a fire entry of 16 KiB,
// not the documented 900 bytes; at --history-fires 100 (allowed: 1 to
// 1000) the job's record outgrows the changelog's max.message.bytes.
//
// Promise (docs/configuration.md, --history-fires): "Each kept fire costs
// up to 900 bytes (a 256-byte trigger id and bucket, a 256-byte error ...)";
// processors/history: "MaxFires*codecs.HistoryFireBytes +
// MaxChanges*codecs.HistoryChangeBytes (about 1 MiB)"; issue 13: "Bad
// results records get rejects like every other input."
//
// Reproduction: --history-fires 100; 80 results for job "big", each with
// fire_id "big@m-0-<16,100 digits>" (status skipped), none over 16 KiB;
// then job "other" on the same instance fires and is reported.
//
// Observed: no reject; the history group's write of big's record to
// chronos-history-table fails ("Attempt to produce message larger than
// configured Producer.MaxMessageBytes: 1048819 > 1048576") and the
// processor stops and restarts in a loop ("processor stopped;
// restarting"): "other"'s fire is never recorded (30 s), nor any fire of
// any job of the partition. The largest record of big written before was
// 1,032,645 bytes against the documented 100,000. At the default 50 fires
// the record is still ~815 KB, 8x the bound.
// Cause: codecs derivedTriggerID `^[mb]-[0-9]+-[0-9]+$` has no length
// bound (Result.checkFire accepts it before ValidateTriggerID's MaxIDLen).
func TestAdversary13bLongDerivedTriggerIDOverflowsTheRecord(t *testing.T) {
	const keep, n = 100, 80
	env := testenv.New(t, 1)
	rejects := env.Collect(string(env.Layout.Rejects()))
	table := env.Collect(string(env.Layout.HistoryTable()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.History.Fires = keep
	env.Start(cfg)
	view := historyView(t, env)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("other", codecs.JobDef{Every: "1s"}, t0)
	env.WaitApplied()
	for i := range n {
		digits := []byte(fmt.Sprintf("%d", i+1))
		for len(digits) < 16100 {
			digits = append(digits, '0')
		}
		at := t0.Add(time.Duration(i) * time.Second)
		res := fmt.Sprintf(`{"v":1,"fire_id":"big@m-0-%s","scheduled_at":%q,"status":"skipped","finished_at":%q}`,
			digits, at.Format(time.RFC3339), at.Format(time.RFC3339))
		require.LessOrEqual(t, len(res), codecs.MaxResultBytes)
		env.Produce(string(env.Layout.Results()), "big", []byte(res), t0)
	}
	env.Tick(t0.Add(time.Second))
	dispatch.WaitLen(t, 1, time.Minute)
	d := dispatch.Dispatches(t)[0]
	env.Produce(string(env.Layout.Results()), "other", encodeResult(t, codecs.Result{JobID: "other", Suffix: d.FireID[len(d.JobID)+1:],
		ScheduledAt: d.ScheduledAt, Attempt: 1, Status: codecs.StatusSucceeded, FinishedAt: d.ScheduledAt.Add(time.Second)}), t0.Add(2*time.Second))
	var otherOK bool
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !otherOK {
		fires, _, err := view.Get("other")
		otherOK = err == nil && len(fires) == 1 && fires[0].Status == codecs.StatusSucceeded
		time.Sleep(200 * time.Millisecond)
	}
	largest := 0
	for _, r := range table.Records() {
		if string(r.Key) == "big" {
			largest = max(largest, len(r.Value))
		}
	}
	bound := keep*codecs.HistoryFireBytes + history.DefaultChanges*codecs.HistoryChangeBytes
	t.Logf("rejects %d; largest changelog record of big %d bytes (bound %d); other's fire recorded: %v", rejects.Len(), largest, bound, otherOK)
	require.True(t, otherOK, "after %d well-formed results with 16 KiB derived trigger ids for job big, the history group no longer records job other's fire (largest record of big written: %d bytes, documented bound %d)", n, largest, bound)
	require.LessOrEqual(t, largest, bound, "job big's history record is %d bytes, over the documented %d (%d fires of at most %d bytes)", largest, bound, keep, codecs.HistoryFireBytes)
}

// TestAdversary13bTwoLargeDispatchEventsStopTheHistoryGroup: the history
// group folds a dispatch event's fire_id suffix into the job's record
// without any bound, so two well-formed dispatch events of 600 KB (a
// foreign or buggy writer of chronos-dispatch) make a 1.2 MB record the
// changelog refuses, at the default --history-fires.
//
// Promise (docs/topics.md, Input policy): every topic a processor consumes,
// "`chronos-dispatch` (for the history group)", follows one policy
// "whatever the record: any size up to the broker's `message.max.bytes`":
// "1. A record that decodes and validates is applied. 2. Any other record
// becomes one reject"; docs/configuration.md: "Each kept fire costs up to
// 900 bytes".
//
// Reproduction: default settings; two dispatch events keyed "x" with
// fire_id "x@<600,000-byte trigger id>" (two different ones), trigger
// manual; then job "other" fires.
//
// Observed: no reject; the history group's write of x's record to
// chronos-history-table fails ("Attempt to produce message larger than
// configured Producer.MaxMessageBytes"): the whole group stops and restarts
// (1 s backoff, doubling to 30 s per further failure within a minute); on
// restart its store already holds the record, so it moves on, but the
// changelog never got it: the view (what the API serves) shows x with 1
// fire of the 2 folded, and a store rebuilt from the changelog loses it.
// Cause: decodeDispatch checks the fire_id names the key, not its length.
func TestAdversary13bTwoLargeDispatchEventsStopTheHistoryGroup(t *testing.T) {
	env := testenv.New(t, 1)
	rejects := env.Collect(string(env.Layout.Rejects()))
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	view := historyView(t, env)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("other", codecs.JobDef{Every: "1s"}, t0)
	env.WaitApplied()
	for _, c := range []byte{'a', 'b'} {
		trig := make([]byte, 600_000)
		for i := range trig {
			trig[i] = c
		}
		d := codecs.Dispatch{FireID: "x@" + string(trig), JobID: "x", Trigger: codecs.TriggerManual, ScheduledAt: t0, FiredAt: t0}
		env.Produce(string(env.Layout.Dispatch()), "x", codecs.AppendDispatch(nil, &d), t0)
	}
	env.Tick(t0.Add(time.Second))
	testenv.Eventually(t, time.Minute, func() error {
		for _, d := range dispatch.Dispatches(t) {
			if d.JobID == "other" {
				return nil
			}
		}
		return fmt.Errorf("other has not fired")
	})
	var otherOK bool
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !otherOK {
		fires, _, err := view.Get("other")
		otherOK = err == nil && len(fires) == 1
		time.Sleep(200 * time.Millisecond)
	}
	xFires, _, err := view.Get("x")
	require.NoError(t, err)
	t.Logf("rejects %d; other's fire recorded: %v; x's fires in the view: %d", rejects.Len(), otherOK, len(xFires))
	require.True(t, rejects.Len() > 0 || len(xFires) == 2, "two 600 KB dispatch events of job x are neither rejected nor kept whole: x's fires shown %d, other recorded %v", len(xFires), otherOK)
}

// TestAdversary13bFarFutureResultsWithTheirOwnTimestamp: round 1's fix
// compares a result's scheduled_at with its record's timestamp, which the
// same producer sets (Kafka's CreateTime, the producer's clock): an
// executor whose clock is wrong stamps its records with the wrong time
// too, and the reports pass. Round 1's reproduction, with each record's
// timestamp its own scheduled_at, still freezes the job's history.
//
// Promise (docs/topics.md, Results): scheduled_at "At most 1 h after the
// record's timestamp: an executor reports a fire after its dispatch, and
// a report further ahead (a wrong clock) would hold a slot of the job's
// last fires until real fires passed it"; issue 13: "keeping per job the
// last N fires".
//
// Reproduction: --history-fires 3; 3 results for job "frozen" with
// scheduled_at 2200-12-31T23:59:5xZ, each record stamped with that time;
// then 5 fires, each reported succeeded.
//
// Observed: accepted, no reject; GET fires shows only the 3 fires of 2200,
// none of the 5 real ones.
func TestAdversary13bFarFutureResultsWithTheirOwnTimestamp(t *testing.T) {
	phantomHistory(t, time.Date(2200, 12, 31, 23, 59, 50, 0, time.UTC), true)
}
