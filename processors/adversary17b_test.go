package processors_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// Adversarial reproductions for issue 17, round 2 (review adv17b), against
// 32781ce. Each test states the promise it breaks and fails on that commit.

func pauseCmd() []byte  { return []byte(`{"v":1,"op":"pause"}`) }
func resumeCmd() []byte { return []byte(`{"v":1,"op":"resume"}`) }

// dupFires returns the fire ids of job id dispatched more than once.
func dupFires(t *testing.T, ds []codecs.Dispatch, id string) []string {
	t.Helper()
	var out []string
	for f, c := range fireCount(t, ds, id) {
		if c > 1 {
			out = append(out, fmt.Sprintf("%s x%d", f, c))
		}
	}
	return out
}

// pausedAhead sets up the shared start of the paused-job tests: job "p"
// (every 10s, v1) fired through :30, then paused at :55 by a command
// consumed while the shards are still at :30 (the trigger path lags: a clock
// failover, a scheduler behind on chronos-shard-triggers). The pause
// applies from its record time, so :40 and :50 are still owed; the advance
// to :40 dispatches p@:40 from the local due entry. It returns the
// dispatch collector after that advance (and its loopbacks) are consumed.
func pausedAhead(t *testing.T, env *testenv.Env, t0 time.Time) *testenv.Collector {
	t.Helper()
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Put("p", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0)
	env.Put("control", codecs.JobDef{Every: "10s", MisfireGrace: "1h"}, t0)
	env.WaitApplied()
	for s := 10; s <= 30; s += 10 {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	waitFires(t, dispatch, "p", scheduledIDs("p", t0.Add(10*time.Second), 10*time.Second, 3))
	waitAdvanced(env)
	env.Produce(string(env.Layout.Jobs()), "p", pauseCmd(), t0.Add(55*time.Second))
	env.WaitApplied()
	env.Tick(t0.Add(40 * time.Second))
	waitFires(t, dispatch, "p", []string{codecs.ScheduledFireID("p", t0.Add(40*time.Second))})
	waitAdvanced(env)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	return dispatch
}

// finishTo ticks :50.. up to end (every 10 s) and waits until the control
// job fired through end and every loopback is consumed.
func finishTo(t *testing.T, env *testenv.Env, dispatch *testenv.Collector, t0 time.Time, end int) {
	t.Helper()
	for s := 50; s <= end; s += 10 {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	waitFires(t, dispatch, "control", scheduledIDs("control", t0.Add(10*time.Second), 10*time.Second, end/10))
	waitAdvanced(env)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
}

// Promise (DESIGN: "Duplicates appear only after a crash, and with the same
// fire_id"; the index is derived: any instance rebuilds the same due index
// from the table alone). A paused job that still owes fires from before its
// pause (pause record time ahead of the shards) dispatches them one advance
// at a time, but its record's Through is updated (settle) only by the
// advance that finishes them: after p@:40 went out the record still says
// "handled through :30". Then
//   - resume: handled() of a paused job returns the record's Through
//     without looking at the local due entry, the resume owes from :30 and
//     p@:40 is dispatched a second time;
//   - a clean rebalance (stop, fresh instance): the new owner derives the
//     due entry :40 from the record and dispatches p@:40 again.
//
// No crash in either case.
func TestAdv17bPausedOwedFiresRepeat(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"resume", "rebalance"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 1)
			a := env.Start(env.Config())
			t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
			dispatch := pausedAhead(t, env, t0)
			switch variant {
			case "resume": // any record time: here after the pause
				env.Produce(string(env.Layout.Jobs()), "p", resumeCmd(), t0.Add(60*time.Second))
				env.WaitApplied()
			case "rebalance":
				a.Stop() // clean: every input and loopback consumed and committed
				env.Start(env.Config())
			}
			finishTo(t, env, dispatch, t0, 80)
			require.Empty(t, dupFires(t, dispatch.Dispatches(t), "p"), "fire_ids dispatched twice without a crash")
		})
	}
}

// Promise (docs/topics.md "Updates, deletes and versions": "no fire_id is
// ever dispatched with two different payloads"). Same start as
// TestAdv17bPausedOwedFiresRepeat: p@:40 went out with v1 as a fire owed
// before the pause. A put of v2 on the paused job (record time :35, a late
// command, or a delete and a re-put) starts after the later of ts and
// "what was handled", which for a paused job is the stale Through (:30):
// the new definition owes :40 again and dispatches p@:40 with v2.
func TestAdv17bPutOnPausedReusesFireID(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"update", "delete+put"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 1)
			env.Start(env.Config())
			t0 := time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)
			dispatch := pausedAhead(t, env, t0)
			if variant == "delete+put" {
				env.Produce(string(env.Layout.Jobs()), "p", []byte(`{"v":1,"op":"delete"}`), t0.Add(35*time.Second))
			}
			env.Put("p", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(35*time.Second))
			env.WaitApplied()
			finishTo(t, env, dispatch, t0, 80)
			fireIDs(t, dispatch.Dispatches(t), "p") // fails on a fire_id with two payloads
		})
	}
}

// Promise (docs/topics.md: "A pause applies from its record time ts: fires
// the job owed at or before ts that are not dispatched yet ... still go
// out"; DESIGN at-least-once within the grace; "an update consumed ahead
// of the shard's time drops nothing"). p is paused at :55 while the shards
// are at :30, so p@:40 and p@:50 (due while p was active) are owed; a put
// (v2, ts :57) then "stays clear of the pause" from max(ts, handled) = :57,
// and :40 and :50 are neither dispatched nor counted as missed. The same
// put on an active job consumed ahead of the shards keeps them (the
// control job q).
func TestAdv17bPutOnPausedDropsOwedFires(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 7, 3, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"p", "q", "control"} {
		env.Put(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0)
	}
	env.WaitApplied()
	for s := 10; s <= 30; s += 10 {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	waitFires(t, dispatch, "p", scheduledIDs("p", t0.Add(10*time.Second), 10*time.Second, 3))
	waitAdvanced(env)
	env.Produce(string(env.Layout.Jobs()), "p", pauseCmd(), t0.Add(55*time.Second))
	for _, id := range []string{"p", "q"} {
		env.Put(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(57*time.Second))
	}
	env.WaitApplied()
	finishTo(t, env, dispatch, t0, 70)
	owed := scheduledIDs("p", t0.Add(40*time.Second), 10*time.Second, 2)
	require.Empty(t, missingFires(t, dispatch, "q", scheduledIDs("q", t0.Add(40*time.Second), 10*time.Second, 2), 5*time.Second), "control")
	var missed int64
	for _, d := range dispatch.Dispatches(t) {
		if d.JobID == "p" {
			missed += d.Missed
		}
	}
	require.Empty(t, missingFires(t, dispatch, "p", owed, 5*time.Second),
		"fires owed before the pause were dropped by a put (missed counted: %d)", missed)
}

// Promise (docs/openapi.json / the API: GET /v1/jobs lists the jobs, pages
// until the cursor is empty; tombstones are "invisible to reads"). List
// reads at most limit+1 keys of a partition and then moves to the next
// partition; tombstones among them are filtered out afterwards, so a page
// that only held tombstones ends the partition: live jobs sorted after
// deleted ones are never listed. Deleting jobs is ordinary, and the
// tombstones stay 8 days.
func TestAdv17bListSkipsJobsAfterTombstones(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	env.Start(env.Config())
	jobs, err := views.NewJobs(env.Kafka, env.Layout, t.TempDir(), slog.Default())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jobs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	t0 := time.Date(2026, 7, 4, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"a1", "a2", "a3", "b"} {
		env.Put(id, codecs.JobDef{Every: "1h"}, t0)
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		env.Produce(string(env.Layout.Jobs()), id, []byte(`{"v":1,"op":"delete"}`), t0)
	}
	env.WaitApplied()
	testenv.Eventually(t, time.Minute, func() error {
		if _, err := jobs.Get("a3"); err == nil {
			return fmt.Errorf("a3 still visible")
		}
		_, err := jobs.Get("b")
		return err
	})
	for _, limit := range []int{1, 2, 3, 10} {
		var ids []string
		cursor := ""
		for range 10 {
			page, next, err := jobs.List("", cursor, limit)
			require.NoError(t, err)
			for _, s := range page {
				ids = append(ids, s.ID)
			}
			if cursor = next; cursor == "" {
				break
			}
		}
		require.Equal(t, []string{"b"}, ids, "listing with limit %d", limit)
	}
}

// Promise (DESIGN: "Duplicates appear only after a crash"; docs/topics.md
// "no fire_id is ever dispatched with two different payloads"; deploy.md: a
// rolling update stops instances cleanly). A variant of
// TestAdv17CleanRebalanceMidAdvanceDuplicates that looks one step further.
// After a clean rebalance in the middle of a multi-callback advance to :10,
// the new owner derives its due index from the table, whose watermark is
// still :00: every job the old owner already fired at :10 has a local due
// entry at :10 again, behind the continuation's cursor. The advance
// finishes from the cursor and leaves those entries in place, so
//   - next: the next advance (to :20) dispatches them at :10 again;
//   - update: a put consumed by the new owner while its advance runs
//     continues "where the old definition stopped", which handled() reads
//     from that stale entry (:10 - 1ns): the new payload owes :10 again.
func TestAdv17bCleanRebalanceMidAdvanceLeavesStaleEntries(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"next", "update"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 1)
			dispatch := env.Collect(string(env.Layout.Dispatch()))
			small := func() instance.Config {
				cfg := env.Config()
				cfg.Fanout.ChunkSize, cfg.Fanout.Budget = 5, time.Nanosecond // an advance of many callbacks (as 25,000 x n jobs at the defaults)
				return cfg
			}
			a := env.Start(small())
			t0 := time.Date(2026, 7, 5, 0, 0, 0, 0, time.UTC)
			const n = 1000
			keys, values := []string{}, [][]byte{}
			for i := range n {
				id := fmt.Sprintf("z-%04d", i)
				keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}))
			}
			env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
			env.WaitApplied()
			env.Tick(t0.Add(10 * time.Second))
			waitFires(t, dispatch, "z-0100", []string{codecs.ScheduledFireID("z-0100", t0.Add(10*time.Second))})
			a.Stop() // a clean stop (a rolling update), mid-advance
			env.Start(small())
			if variant == "update" { // z-0000 was fired by the old owner
				env.Put("z-0000", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(5*time.Second))
			}
			last := fmt.Sprintf("z-%04d", n-1)
			waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(10*time.Second))})
			env.WaitApplied()
			env.Tick(t0.Add(20 * time.Second))
			waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(20*time.Second))})
			env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
			ds := dispatch.Dispatches(t)
			var dups []string
			for i := range n {
				id := fmt.Sprintf("z-%04d", i)
				got := fireIDs(t, ds, id) // fails on two payloads
				for _, at := range []time.Duration{10 * time.Second, 20 * time.Second} {
					_, ok := got[codecs.ScheduledFireID(id, t0.Add(at))]
					require.True(t, ok, "%s missing", codecs.ScheduledFireID(id, t0.Add(at)))
				}
				dups = append(dups, dupFires(t, ds, id)...)
			}
			// docs/reliability.md, "A clean rebalance in the middle of an
			// advance": when the pass completes on the new owner, the entries
			// it fired behind its cursor are re-derived under the new
			// watermark, so the next advance sends none of them again; the
			// update consumed during the continuation reads from the shard
			// record how far the advance got, so it does not owe z-0000's
			// :10 again.
			require.Empty(t, dups, "fire_ids dispatched twice after a clean rebalance mid-advance")
			t.Logf("%d of %d fire_ids dispatched twice after a clean rebalance mid-advance: %v", len(dups), n, dups)
		})
	}
}
