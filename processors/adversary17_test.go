package processors_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// Adversarial reproductions for issue 17's first fixes (review adv17). Each
// test states the promise it broke; each failed on 2e1e529 and is kept as a
// regression test.

// fireCount returns how many times each fire id of job id was dispatched.
func fireCount(t *testing.T, ds []codecs.Dispatch, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, d := range ds {
		if d.JobID == id {
			out[d.FireID]++
		}
	}
	return out
}

// waitAdvanced waits until every tick produced so far has reached the
// scheduler: the clock group has consumed chronos-clock (and so emitted its
// shard triggers), then the scheduler has consumed those. Waiting on the
// scheduler alone can pass before the clock group has emitted anything.
func waitAdvanced(env *testenv.Env) {
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
}

// missingFires reports the fire ids of want that job id has not been
// dispatched (within timeout; nil when all are there).
func missingFires(t *testing.T, c *testenv.Collector, id string, want []string, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := fireCount(t, c.Dispatches(t), id)
		var miss []string
		for _, w := range want {
			if got[w] == 0 {
				miss = append(miss, w)
			}
		}
		if len(miss) == 0 || time.Now().After(deadline) {
			return miss
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Promise (docs/topics.md "Updates, deletes and versions"; DESIGN "a fire_id
// names one fire"): "no fire_id is ever dispatched with two different
// payloads". A delete followed by a put of the same id, consumed after the
// fires they predate (lag between the command and the trigger topics, or a
// client timestamp), creates a "new job" that owes fires from its record
// time: it re-dispatches u@:40, :50, :60, already dispatched with the old
// incarnation's payload, with the new payload under the same fire_ids.
func TestAdv17DeleteAndLateRePutReusesFireIDs(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Put("u", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0)
	env.WaitApplied()
	for s := 10; s <= 60; s += 10 {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	waitFires(t, dispatch, "u", scheduledIDs("u", t0.Add(10*time.Second), 10*time.Second, 6))
	// The same late replacement as TestLateUpdateDoesNotRefire, written as a
	// delete and a put.
	env.Produce(string(env.Layout.Jobs()), "u", []byte(`{"v":1,"op":"delete"}`), t0.Add(35*time.Second))
	env.Put("u", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(35*time.Second))
	env.WaitApplied()
	env.Tick(t0.Add(70 * time.Second))
	waitFires(t, dispatch, "u", []string{codecs.ScheduledFireID("u", t0.Add(70*time.Second))})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	fireIDs(t, dispatch.Dispatches(t), "u") // fails on a fire_id with two payloads
}

// Promise (docs/topics.md "Updates, deletes and versions"): an update
// "applies the new definition to the times after the later of ts and what
// the old definition has handled: the shard's watermark, ...". A job that
// once owed fires (a late put) and has caught up keeps, in its record,
// NotBefore = its old schedule's next time - 1ns (settle). An update then
// starts the new schedule only after that instant: c, updated from every 1m
// to every 10s at 00:01:15 (watermark 00:01:10), skips 00:01:20, :30, :40
// and :50, which are neither dispatched nor counted as missed. The control
// job d, with the same definitions but put on time, gets them. (A job
// caught up on "every 24h" and updated to "every 1m" skips a day.)
func TestAdv17UpdateAfterCatchUpSkipsNewSchedule(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Tick(t0.Add(60 * time.Second))
	waitAdvanced(env)
	env.Put("c", codecs.JobDef{Every: "1m", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0.Add(5*time.Second)) // late: owes :60
	env.Put("d", codecs.JobDef{Every: "1m", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0.Add(65*time.Second))
	env.WaitApplied()
	env.Tick(t0.Add(70 * time.Second))
	waitFires(t, dispatch, "c", []string{codecs.ScheduledFireID("c", t0.Add(60*time.Second))})
	// The catch-up's settle (a loopback sent after the fires) has applied:
	// c is an ordinary job again. (Any later update sees this record.)
	testenv.Eventually(t, time.Minute, func() error {
		b, err := inst.Scheduler().Store(0).Get("c")
		if err != nil {
			return err
		}
		r, err := codecs.DecodeJobRecord(b)
		if err != nil {
			return err
		}
		if !r.Through.IsZero() {
			return fmt.Errorf("c still owes fires (through %s)", r.Through)
		}
		return nil
	})
	for _, id := range []string{"c", "d"} {
		env.Put(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(75*time.Second))
	}
	env.WaitApplied()
	env.Tick(t0.Add(120 * time.Second))
	want := func(id string) []string { return scheduledIDs(id, t0.Add(80*time.Second), 10*time.Second, 5) }
	waitFires(t, dispatch, "d", want("d")) // the control
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	require.Empty(t, missingFires(t, dispatch, "c", want("c"), 5*time.Second),
		"an update after a catch-up skipped the new schedule's fires (control job d got them)")
}

// Promise (docs/topics.md "Owed fires" and "Updates, deletes and
// versions"; DESIGN at-least-once): every fire within the grace is
// dispatched; a command applied while an advance is under way "leaves the
// times up to it to the old definition". It does not: handled() returns the
// advance's T, so the command's record moves the job's due entry past T
// (update: NotBefore = T; pause: Through = T), the advance (which reads the
// new record) never fires the job's time T, and nothing owes it afterwards.
// z-0999@00:00:10 is lost: neither payload is ever dispatched for it. With a
// pause whose record time (00:00:12) is after that fire, the fire was due
// while the job was active and is lost as well.
func TestAdv17CommandDuringAdvanceLosesFire(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"update", "pause"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 1)
			dispatch := env.Collect(string(env.Layout.Dispatch()))
			cfg := env.Config()
			cfg.Fanout.ChunkSize, cfg.Fanout.Budget = 5, time.Nanosecond // an advance of many callbacks (as 25,000 x n jobs at the defaults)
			env.Start(cfg)
			t0 := time.Date(2026, 6, 3, 0, 0, 0, 0, time.UTC)
			const n = 1000
			keys, values := []string{}, [][]byte{}
			for i := range n {
				id := fmt.Sprintf("z-%04d", i)
				keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}))
			}
			env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
			env.WaitApplied()
			env.Tick(t0.Add(10 * time.Second))
			// Once the advance has begun (z-0020 fired), a command on the
			// last job, which the advance's cursor has not reached yet.
			waitFires(t, dispatch, "z-0020", []string{codecs.ScheduledFireID("z-0020", t0.Add(10*time.Second))})
			last := fmt.Sprintf("z-%04d", n-1)
			switch op {
			case "update": // its record time (:01) is even before T; it does not matter
				env.Put(last, codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(time.Second))
			case "pause": // paused at :12, after its :10 fire was due; resumed at :13
				env.Produce(string(env.Layout.Jobs()), last, []byte(`{"v":1,"op":"pause"}`), t0.Add(12*time.Second))
			}
			waitFires(t, dispatch, fmt.Sprintf("z-%04d", n-2), []string{codecs.ScheduledFireID(fmt.Sprintf("z-%04d", n-2), t0.Add(10*time.Second))})
			env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
			if op == "pause" {
				env.Produce(string(env.Layout.Jobs()), last, []byte(`{"v":1,"op":"resume"}`), t0.Add(13*time.Second))
				env.WaitApplied()
			}
			env.Tick(t0.Add(20 * time.Second))
			waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(20*time.Second))})
			require.Empty(t, missingFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(10*time.Second))}, 5*time.Second),
				"a fire due at T was lost because its job got a command while the advance to T ran")
		})
	}
}

// Promise (DESIGN: "Duplicates appear only after a crash"; docs/topics.md
// "no fire_id is ever dispatched with two different payloads"; the index
// is derived: a new owner rebuilds the same entries from the table). A late
// put owing more than one plan's fires (10,000) is fired in two passes of one
// advance; each pass sends a settle with Was = the record's Through, so the
// second settle never applies and the record keeps Through at the end of the
// first pass although the job has caught up. Writing that record re-derives
// the job's due entry from it, backwards: the same owner's next advance
// dispatches 801 fires again, and so does a fresh owner after a clean
// rebalance; with an update consumed in between, with another payload.
func TestAdv17StaleThroughAfterTwoPassesRefires(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ rebalance, update bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("rebalance=%v,update=%v", c.rebalance, c.update), func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 1)
			dispatch := env.Collect(string(env.Layout.Dispatch()))
			cfg := env.Config()
			cfg.Fanout.Budget = time.Minute // both passes in one callback (also the default's case when a pass takes < 500 ms)
			a := env.Start(cfg)
			t0 := time.Date(2026, 6, 4, 0, 0, 0, 0, time.UTC)
			gap := 3 * time.Hour
			env.Tick(t0)
			env.Tick(t0.Add(gap))
			waitAdvanced(env)
			env.Put("busy", codecs.JobDef{Every: "1s", MisfireGrace: "168h", MisfirePolicy: "fire_all", Payload: []byte(`"v1"`)}, t0) // 3 h late
			env.WaitApplied()
			env.Tick(t0.Add(gap + time.Second))
			waitFires(t, dispatch, "busy", scheduledIDs("busy", t0.Add(time.Second), time.Second, int(gap/time.Second)+1))
			env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
			if c.rebalance {
				a.Stop() // a clean stop: no crash
				env.Start(env.Config())
			}
			if c.update {
				env.Put("busy", codecs.JobDef{Every: "1s", MisfireGrace: "168h", MisfirePolicy: "fire_all", Payload: []byte(`"v2"`)}, t0.Add(time.Hour))
				env.WaitApplied()
			}
			env.Tick(t0.Add(gap + 2*time.Second))
			waitFires(t, dispatch, "busy", []string{codecs.ScheduledFireID("busy", t0.Add(gap+2*time.Second))})
			env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
			ds := dispatch.Dispatches(t)
			fireIDs(t, ds, "busy") // fails on two payloads
			var dups int
			for _, c := range fireCount(t, ds, "busy") {
				if c > 1 {
					dups++
				}
			}
			require.Zero(t, dups, "fire_ids dispatched twice without a crash")
		})
	}
}

// Promise (DESIGN: "Duplicates appear only after a crash"). Late jobs
// catching up while the scheduler has a backlog of ticks (it lagged a few
// seconds: a GC pause, a slow disk, a restart) are dispatched twice, fire
// after fire, with no crash and no rebalance: the settle of advance k is
// consumed (from the loop topic) after advance k+1 already fired the job
// from its local entry, finds the job still "behind" the new watermark,
// writes Through = advance k's next time - 1ns, and so re-derives the job's
// due entry back to a time already dispatched; the settle of advance k+1
// no longer matches (Was) and is dropped. Advance k+2 fires it again.
func TestAdv17TickBacklogDuplicatesOwedFires(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Tick(t0.Add(60 * time.Second))
	waitAdvanced(env)
	const jobs = 20
	for i := range jobs {
		env.Put(fmt.Sprintf("late-%02d", i), codecs.JobDef{Every: "10s", MisfireGrace: "1h"}, t0.Add(5*time.Second))
	}
	env.WaitApplied()
	for s := 70; s <= 200; s += 10 { // a backlog of ticks
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	last := fmt.Sprintf("late-%02d", jobs-1)
	waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(200*time.Second))})
	waitAdvanced(env)
	env.Tick(t0.Add(210 * time.Second))
	waitFires(t, dispatch, last, []string{codecs.ScheduledFireID(last, t0.Add(210*time.Second))})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	ds := dispatch.Dispatches(t)
	var dups, fires int
	for i := range jobs {
		for _, c := range fireCount(t, ds, fmt.Sprintf("late-%02d", i)) {
			fires++
			if c > 1 {
				dups++
			}
		}
	}
	require.Zero(t, dups, "%d of %d fire_ids dispatched twice without a crash", dups, fires)
}

// Promise (docs/openapi.json LastFire: "The latest scheduled fire the job's
// shard has passed"; issue 17: "GET can show owed fires as the last fire").
// A late one-shot job that fired and completed keeps Through (its put's
// time, before its fire) in its record; the view takes it as the job's
// handled-through time and shows no last fire at all.
func TestAdv17ViewCompletedLateJobHasNoLastFire(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	jobs, err := views.NewJobs(env.Kafka, env.Layout, t.TempDir(), slog.Default())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jobs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	t0 := time.Date(2026, 6, 6, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Tick(t0.Add(20 * time.Second))
	waitAdvanced(env)
	at := t0.Add(8 * time.Second)
	env.Put("once", codecs.JobDef{At: at.Format(time.RFC3339), MisfireGrace: "1h"}, t0.Add(5*time.Second)) // late: owes :08
	env.WaitApplied()
	env.Tick(t0.Add(30 * time.Second))
	waitFires(t, dispatch, "once", []string{codecs.ScheduledFireID("once", at)})
	testenv.Eventually(t, time.Minute, func() error {
		j, err := jobs.Get("once")
		if err != nil {
			return err
		}
		if j.Status != "completed" {
			return fmt.Errorf("once is %s", j.Status)
		}
		return nil
	})
	j, err := jobs.Get("once")
	require.NoError(t, err)
	require.NotNil(t, j.LastFire, "a completed job that fired shows no last fire: %+v", j)
	require.Equal(t, codecs.ScheduledFireID("once", at), j.LastFire.FireID)
}

// Promise (docs/reliability.md "No single host sets the time": "The
// broker's clock is the one Chronos trusts"): a tick is bounded by the
// EARLIER of the broker's time and the clock owner's wall clock, so an
// owner whose clock is an hour slow holds every shard an hour back, whatever
// the broker and the other hosts say. Fires due by the broker's time are
// not dispatched (they go out an hour late, with missed = 0, defeating the
// grace; when the owner changes, time jumps and the policy counts them as
// missed).
func TestAdv17SlowClockOwnerHoldsTimeBack(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.Now = func() time.Time { return time.Now().Add(-time.Hour) } // the clock owner's host is an hour slow
	env.Start(cfg)
	now := time.Now().UTC().Truncate(time.Second)
	env.Put("s", codecs.JobDef{Every: "10s", MisfireGrace: "10m"}, now.Add(-2*time.Minute))
	env.WaitApplied()
	env.Tick(now) // a host with the right time; the broker's time is now too
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	due := now.Add(-time.Minute).Truncate(10 * time.Second)
	require.Empty(t, missingFires(t, dispatch, "s", []string{codecs.ScheduledFireID("s", due)}, 5*time.Second),
		"a fire due a minute ago by the broker's clock was not dispatched: one slow host holds time back")
}

// Promise (docs/reliability.md "No single host sets the time": one instance
// whose clock runs ahead "fires nothing early by more than the bound").
// The bound relies on chronos-clock having message.timestamp.type =
// LogAppendTime, which Layout.Ensure sets only when it creates the topic: a
// cluster upgraded from an earlier version keeps its CreateTime clock topic
// (Ensure never checks or alters existing configs), every tick then carries
// its producer's clock, and a fast host that owns the clock group moves
// every shard an hour ahead: fire_once jobs fire early with a large missed
// count. (On the embedded broker, which never stamps appends, this holds for
// any topic.)
func TestAdv17FastClockOwnerOnUpgradedClockTopic(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	// The clock topic as an earlier version created it: no timestamp type.
	adm := kadm.NewClient(env.Client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clockTopic := string(env.Layout.Clock())
	_, err := adm.DeleteTopics(ctx, clockTopic)
	require.NoError(t, err)
	testenv.Eventually(t, 30*time.Second, func() error {
		_, err := adm.CreateTopic(ctx, 1, env.Layout.Replication, nil, clockTopic)
		return err
	})
	require.NoError(t, env.Layout.Ensure(ctx, adm)) // what the upgraded instance runs: no error, no change
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.Now = func() time.Time { return time.Now().Add(time.Hour) } // the clock owner's host is an hour fast
	env.Start(cfg)
	now := time.Now().UTC().Truncate(time.Second)
	env.Put("soon", codecs.JobDef{Every: "1m", MisfirePolicy: "fire_once"}, now)
	env.WaitApplied()
	// The fast host's tick. Apache Kafka stamps it with its own append
	// time once Ensure has repaired the topic; the embedded broker keeps
	// the producer's timestamp, so the test sends the broker's time.
	env.Produce(clockTopic, clock.TickKey, codecs.EncodeInternal(codecs.Tick{Time: now.Add(time.Hour), Instance: "fast"}), time.Now())
	env.WaitConsumed(string(env.Layout.ClockGroup()), clockTopic, time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	limit := time.Now().Add(2 * time.Second)
	for _, d := range dispatch.Dispatches(t) {
		require.False(t, d.ScheduledAt.After(limit), "%s dispatched early (scheduled %s, limit %s, missed %d)", d.FireID, d.ScheduledAt, limit, d.Missed)
		require.Zero(t, d.Missed, "%s", d.FireID)
	}
}

// Promise (docs/topics.md "Updates, deletes and versions": "Each job has a
// handled-through time: every time of its schedule up to it has been
// dispatched (or counted as missed)"; DESIGN at-least-once). The mirror of a
// late command: a command consumed while the trigger path lags behind the
// command's time (the clock group failing over for a session timeout, a
// scheduler behind on chronos-shard-triggers) sets the job's handled-through
// time to the command's ts. The old definition's times between the
// watermark and ts (u@:40 and :50, due while the job was active with v1)
// are then neither dispatched nor counted as missed, for an update and for
// a pause whose record time is after them.
func TestAdv17CommandAheadOfTriggersDropsDueFires(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"update", "pause"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 1)
			dispatch := env.Collect(string(env.Layout.Dispatch()))
			env.Start(env.Config())
			t0 := time.Date(2026, 6, 7, 0, 0, 0, 0, time.UTC)
			env.Put("u", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0)
			env.Put("control", codecs.JobDef{Every: "10s", MisfireGrace: "1h"}, t0)
			env.WaitApplied()
			for s := 10; s <= 30; s += 10 {
				env.Tick(t0.Add(time.Duration(s) * time.Second))
			}
			waitFires(t, dispatch, "u", scheduledIDs("u", t0.Add(10*time.Second), 10*time.Second, 3))
			waitAdvanced(env)
			// At :55 by the command's clock; the shards are still at :30.
			switch op {
			case "update":
				env.Put("u", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(55*time.Second))
			case "pause":
				env.Produce(string(env.Layout.Jobs()), "u", []byte(`{"v":1,"op":"pause"}`), t0.Add(55*time.Second))
				env.Produce(string(env.Layout.Jobs()), "u", []byte(`{"v":1,"op":"resume"}`), t0.Add(56*time.Second))
			}
			env.WaitApplied()
			for s := 40; s <= 60; s += 10 { // the trigger path catches up
				env.Tick(t0.Add(time.Duration(s) * time.Second))
			}
			waitFires(t, dispatch, "control", scheduledIDs("control", t0.Add(10*time.Second), 10*time.Second, 6))
			waitAdvanced(env)
			var missed int64
			for _, d := range dispatch.Dispatches(t) {
				if d.JobID == "u" {
					missed += d.Missed
				}
			}
			miss := missingFires(t, dispatch, "u", scheduledIDs("u", t0.Add(40*time.Second), 10*time.Second, 3), 5*time.Second)
			require.Empty(t, miss, "fires due before the command's time neither dispatched nor counted as missed (missed counted: %d)", missed)
		})
	}
}

// Promise (DESIGN: "Duplicates appear only after a crash"; deploy.md: a
// rolling update stops instances cleanly, "a fan-out chunk in flight
// finishes and commits"). A clean rebalance in the middle of a
// multi-callback advance re-dispatches everything the old owner already
// fired in that advance: the new owner rebuilds its index from the
// watermark (which the advance has not moved yet), and the advance's new
// rescan from the start ("the watermark never passes an entry still due")
// fires every entry behind the continuation's cursor again. Before
// 7009df2 the cursor skipped them. Nothing is lost.
func TestAdv17CleanRebalanceMidAdvanceDuplicates(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	small := func() instance.Config {
		cfg := env.Config()
		cfg.Fanout.ChunkSize, cfg.Fanout.Budget = 5, time.Nanosecond // an advance of many callbacks (as 25,000 x n jobs at the defaults)
		return cfg
	}
	a := env.Start(small())
	t0 := time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC)
	const n = 1000
	keys, values := []string{}, [][]byte{}
	for i := range n {
		id := fmt.Sprintf("z-%04d", i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h"}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	waitFires(t, dispatch, "z-0100", []string{codecs.ScheduledFireID("z-0100", t0.Add(10*time.Second))})
	a.Stop() // a clean stop (a rolling update), mid-advance
	env.Start(small())
	for i := range n {
		id := fmt.Sprintf("z-%04d", i)
		waitFires(t, dispatch, id, []string{codecs.ScheduledFireID(id, t0.Add(10*time.Second))})
	}
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	ds := dispatch.Dispatches(t)
	dups := 0
	for i := range n {
		for _, c := range fireCount(t, ds, fmt.Sprintf("z-%04d", i)) {
			if c > 1 {
				dups++
			}
		}
	}
	require.Zero(t, dups, "fire_ids dispatched twice after a clean rebalance")
}
