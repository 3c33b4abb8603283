package processors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
)

// The scenarios of issue 17: ordinary sequences of commands, rebalances and
// clocks that lost or misplaced fires. Each runs on the embedded broker and,
// with CHRONOS_TEST_BROKERS, on Apache Kafka.

// fireIDs returns the dispatched fire ids of job id, with their payloads;
// it fails on a fire_id dispatched with two payloads.
func fireIDs(t *testing.T, ds []codecs.Dispatch, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range ds {
		if d.JobID != id {
			continue
		}
		if p, ok := out[d.FireID]; ok && p != string(d.Payload) {
			t.Fatalf("fire_id %s dispatched with two payloads: %s and %s", d.FireID, p, d.Payload)
		}
		out[d.FireID] = string(d.Payload)
	}
	return out
}

// waitFires waits until every fire id in want has been dispatched.
func waitFires(t *testing.T, c *testenv.Collector, id string, want []string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		got := fireIDs(t, c.Dispatches(t), id)
		for _, w := range want {
			if _, ok := got[w]; !ok {
				return fmt.Errorf("%s not dispatched (have %d fires of %s)", w, len(got), id)
			}
		}
		return nil
	})
}

func scheduledIDs(id string, from time.Time, step time.Duration, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = codecs.ScheduledFireID(id, from.Add(time.Duration(i)*step))
	}
	return out
}

// A late put owes its fires from its own record time, and those fires live
// in its record: a new owner (fresh data dir) or the old owner coming back
// rebuilds the same due entry and dispatches all of them.
func TestLatePutOwedFiresSurviveNewOwner(t *testing.T) {
	t.Parallel()
	for _, returning := range []bool{false, true} {
		t.Run(fmt.Sprintf("old owner returns=%v", returning), func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t, 2)
			dispatch := env.Collect(string(env.Layout.Dispatch()))
			t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			cfgA := env.Config()
			a := env.Start(cfgA)
			env.Tick(t0.Add(60 * time.Second))
			waitAdvanced(env) // the clock group emitted the advance, and the scheduler applied it
			if returning {
				a.Stop()
				b := env.Start(env.Config())
				env.Put("late", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`1`)}, t0.Add(5*time.Second))
				env.WaitApplied()
				b.Stop()
				env.Start(cfgA) // the old owner with its old data dir
			} else {
				env.Put("late", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`1`)}, t0.Add(5*time.Second))
				env.WaitApplied()
				a.Stop()
				env.Start(env.Config()) // a new owner, rebuilding from the table
			}
			env.Tick(t0.Add(70 * time.Second))
			// Owed: :10 to :60 (late, within the grace) and :70.
			waitFires(t, dispatch, "late", scheduledIDs("late", t0.Add(10*time.Second), 10*time.Second, 7))
		})
	}
}

// A job owing more than one advance's worth of fires (every second, a week's
// grace, three hours of downtime) gets every one of them before the
// watermark passes it, and a rebuild afterwards owes nothing twice or less.
func TestLongCatchUpBeforeWatermark(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t0 := time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	a := env.Start(env.Config())
	env.Tick(t0)
	env.Put("busy", codecs.JobDef{Every: "1s", MisfireGrace: "168h", MisfirePolicy: "fire_all"}, t0)
	env.WaitApplied()
	gap := 3 * time.Hour
	env.Tick(t0.Add(gap))
	want := scheduledIDs("busy", t0.Add(time.Second), time.Second, int(gap/time.Second))
	waitFires(t, dispatch, "busy", want)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	a.Stop()
	env.Start(env.Config()) // a new owner rebuilds its due index from the table
	env.Tick(t0.Add(gap + time.Second))
	waitFires(t, dispatch, "busy", []string{codecs.ScheduledFireID("busy", t0.Add(gap+time.Second))})
}

// A put consumed while a long advance runs (tiny chunks and budget, so the
// advance continues through the loopback many times) owes its fire at T even
// when its due entry lands behind the advance's cursor; a rebuild keeps it.
func TestPutDuringAdvanceIsNotPassedByWatermark(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	cfg := env.Config()
	cfg.Fanout.ChunkSize, cfg.Fanout.Budget = 5, time.Nanosecond
	a := env.Start(cfg)
	t0 := time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)
	keys, values := []string{}, [][]byte{}
	for i := range 400 {
		id := fmt.Sprintf("z-%03d", i)
		keys, values = append(keys, id), append(values, testenv.PutCommand(id, codecs.JobDef{Every: "10s", MisfireGrace: "1h"}))
	}
	env.ProduceMany(string(env.Layout.Jobs()), keys, values, t0)
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	// Once the advance has begun: a-new sorts before every z-, so its entry
	// at :10 is behind the advance's cursor.
	waitFires(t, dispatch, "z-020", []string{codecs.ScheduledFireID("z-020", t0.Add(10*time.Second))})
	env.Put("a-new", codecs.JobDef{Every: "10s", MisfireGrace: "1h"}, t0.Add(time.Second))
	waitFires(t, dispatch, "z-399", []string{codecs.ScheduledFireID("z-399", t0.Add(10*time.Second))})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	a.Stop()
	env.Start(env.Config()) // a new owner rebuilds its due index from the table
	env.Tick(t0.Add(20 * time.Second))
	waitFires(t, dispatch, "a-new", scheduledIDs("a-new", t0.Add(10*time.Second), 10*time.Second, 2))
}

// A one-shot job deleted during its own fan-out and put again under the same
// id is a new job: the completion of the old one, still in flight on the
// loop topic, must not complete it.
func TestDeleteAndRePutIsANewJob(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	env.Put("x", codecs.JobDef{At: t0.Add(10 * time.Second).Format(time.RFC3339)}, t0)
	env.WaitApplied()
	env.Tick(t0.Add(10 * time.Second))
	waitFires(t, dispatch, "x", []string{codecs.ScheduledFireID("x", t0.Add(10*time.Second))})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	b, err := inst.Scheduler().Store(0).Get("x")
	require.NoError(t, err)
	old, err := codecs.DecodeJobRecord(b)
	require.NoError(t, err)
	require.Equal(t, codecs.StatusCompleted, old.Status)
	env.Produce(string(env.Layout.Jobs()), "x", []byte(`{"v":1,"op":"delete"}`), t0.Add(10*time.Second))
	env.Put("x", codecs.JobDef{Every: "10s"}, t0.Add(10*time.Second))
	env.WaitApplied()
	// The old job's completion arriving now (as when the delete and the put
	// are consumed while it is in flight).
	env.Produce(string(env.Layout.SchedulerLoop()), "x",
		codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindComplete, T: t0.Add(10 * time.Second), Version: old.Version}), t0)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	env.Tick(t0.Add(20 * time.Second))
	waitFires(t, dispatch, "x", []string{codecs.ScheduledFireID("x", t0.Add(20*time.Second))})
}

// if_version of a deleted job's version does not match the new job with the
// same id: versions are never reused.
func TestVersionsAreNotReusedAfterDelete(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	rejects := env.Collect(string(env.Layout.Rejects()))
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	env.Put("v", codecs.JobDef{Every: "1h"}, t0)
	env.WaitApplied()
	st := inst.Scheduler().Store(0)
	require.NotNil(t, st)
	version := func() uint64 {
		b, err := st.Get("v")
		require.NoError(t, err)
		rec, err := codecs.DecodeJobRecord(b)
		require.NoError(t, err)
		return rec.Version
	}
	first := version()
	env.Produce(string(env.Layout.Jobs()), "v", []byte(`{"v":1,"op":"delete"}`), t0)
	env.Put("v", codecs.JobDef{Every: "2h"}, t0)
	env.WaitApplied()
	require.Greater(t, version(), first)
	// A writer still holding the old incarnation's version is refused.
	env.Produce(string(env.Layout.Jobs()), "v", []byte(fmt.Sprintf(`{"v":1,"op":"put","if_version":%d,"job":{"every":"3h"}}`, first)), t0)
	rejects.WaitLen(t, 1, time.Minute)
	r, err := codecs.DecodeReject(rejects.Records()[0].Value)
	require.NoError(t, err)
	require.Equal(t, codecs.CodeVersionConflict, r.Code)
}

// One host with a clock ahead of the broker's cannot fire jobs early: its
// ticks are announced as at most the broker's time plus the bound, so a
// tick an hour ahead neither fires the next hour's times nor makes them
// count as missed.
func TestFastHostCannotMoveTime(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	now := time.Now().UTC().Truncate(time.Second)
	env.Put("soon", codecs.JobDef{Every: "1m", MisfirePolicy: "fire_once"}, now)
	env.WaitApplied()
	// One host an hour ahead, then one 30 s ahead. The broker stamps each
	// tick with its own time when it appends it (chronos-clock is
	// LogAppendTime; Apache Kafka overwrites the producer's timestamp, the
	// embedded broker keeps the one sent, so the test sends the broker's).
	for _, ahead := range []time.Duration{time.Hour, 30 * time.Second} {
		env.Produce(string(env.Layout.Clock()), clock.TickKey,
			codecs.EncodeInternal(codecs.Tick{Time: now.Add(ahead), Instance: "fast"}), time.Now())
	}
	env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
	limit := time.Now().Add(time.Second) // the broker's time plus the 1 s bound
	for _, d := range dispatch.Dispatches(t) {
		require.False(t, d.ScheduledAt.After(limit), "%s dispatched early (scheduled %s, limit %s)", d.FireID, d.ScheduledAt, limit)
		require.Zero(t, d.Missed, "%s", d.FireID)
	}
}

// An update whose record time lies before fires already dispatched does not
// move the job back: no fire_id goes out with two payloads.
func TestLateUpdateDoesNotRefire(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	env.Start(env.Config())
	t0 := time.Date(2026, 5, 5, 0, 0, 0, 0, time.UTC)
	env.Put("u", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v1"`)}, t0)
	env.WaitApplied()
	for s := 10; s <= 60; s += 10 {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	waitFires(t, dispatch, "u", scheduledIDs("u", t0.Add(10*time.Second), 10*time.Second, 6))
	env.Put("u", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`"v2"`)}, t0.Add(35*time.Second))
	env.WaitApplied()
	env.Tick(t0.Add(70 * time.Second))
	waitFires(t, dispatch, "u", []string{codecs.ScheduledFireID("u", t0.Add(70*time.Second))})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	got := fireIDs(t, dispatch.Dispatches(t), "u") // fails on two payloads
	require.Equal(t, `"v2"`, got[codecs.ScheduledFireID("u", t0.Add(70*time.Second))])
	require.Equal(t, `"v1"`, got[codecs.ScheduledFireID("u", t0.Add(60*time.Second))])
}
