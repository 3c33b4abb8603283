package processors_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestMaxFiresAndPauseNote drives the simulated clock minute by minute over
// jobs with max_fires and requires exactly the fires the limit allows: a
// plain limit (3 fires, then completed), a limit across a pause (times
// while paused are not owed and do not count; after the resume the job
// uses what it has left), a limit across an update (the count used so far
// stays), and a manual fire that does not count. The pause carries a note
// and its actor, kept on the record while paused and cleared on resume.
func TestMaxFiresAndPauseNote(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	m := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
	env := testenv.New(t, 1)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	inst := env.Start(env.Config())
	env.Tick(t0)
	env.Put("lim", codecs.JobDef{Every: "1m", MaxFires: 3}, t0)
	env.Put("lim-pause", codecs.JobDef{Every: "1m", MaxFires: 4}, t0)
	env.Put("lim-upd", codecs.JobDef{Every: "1m", MaxFires: 3, Payload: []byte(`1`)}, t0)
	env.WaitApplied()
	record := func(id string) *codecs.JobRecord {
		b, err := inst.Scheduler().Store(0).Get(id)
		require.NoError(t, err)
		rec, err := codecs.DecodeJobRecord(b)
		require.NoError(t, err)
		return rec
	}
	command := func(id string, m codecs.CommandMsg, ts time.Time, actor string) {
		m.ID = id
		v, err := codecs.EncodeCommand(m)
		require.NoError(t, err)
		r := &kgo.Record{Topic: string(env.Layout.Jobs()), Key: []byte(id), Value: v, Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: codecs.ActorHeader, Value: []byte(actor)}}}
		require.NoError(t, env.Client.ProduceSync(context.Background(), r).FirstErr())
		env.WaitApplied()
	}
	step := func(n int) {
		env.Tick(m(n))
		env.WaitConsumed(string(env.Layout.ClockGroup()), string(env.Layout.Clock()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), time.Minute)
		env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
	}
	command("lim", codecs.CommandMsg{Op: codecs.OpFire, TriggerID: "by-hand"}, t0.Add(30*time.Second), "ops")
	step(1)
	step(2)
	// After 2 fires: lim-upd is updated (same limit, new payload), lim-pause paused with a note.
	command("lim-upd", codecs.CommandMsg{Op: codecs.OpPut, Job: &codecs.JobDef{Every: "1m", MaxFires: 3, Payload: []byte(`2`)}}, m(2).Add(30*time.Second), "alice")
	command("lim-pause", codecs.CommandMsg{Op: codecs.OpPause, Note: "billing down, INC-4711"}, m(2).Add(30*time.Second), "ops-token")
	rec := record("lim-pause")
	require.Equal(t, codecs.StatusPaused, rec.Status)
	require.Equal(t, codecs.PauseNote{Note: "billing down, INC-4711", By: "ops-token"}, rec.Pause)
	for n := 3; n <= 6; n++ {
		step(n)
	}
	command("lim-pause", codecs.CommandMsg{Op: codecs.OpResume}, m(6).Add(30*time.Second), "ops-token")
	rec = record("lim-pause")
	require.Equal(t, codecs.StatusActive, rec.Status)
	require.Equal(t, codecs.PauseNote{}, rec.Pause)
	for n := 7; n <= 10; n++ {
		step(n)
	}
	want := map[string][]string{
		"lim":       {codecs.TriggeredFireID("lim", "by-hand"), codecs.ScheduledFireID("lim", m(1)), codecs.ScheduledFireID("lim", m(2)), codecs.ScheduledFireID("lim", m(3))},
		"lim-pause": {codecs.ScheduledFireID("lim-pause", m(1)), codecs.ScheduledFireID("lim-pause", m(2)), codecs.ScheduledFireID("lim-pause", m(7)), codecs.ScheduledFireID("lim-pause", m(8))},
		"lim-upd":   {codecs.ScheduledFireID("lim-upd", m(1)), codecs.ScheduledFireID("lim-upd", m(2)), codecs.ScheduledFireID("lim-upd", m(3))},
	}
	// Every event produced has been read (none arrives after the check).
	ends, err := kadm.NewClient(env.Client).ListEndOffsets(context.Background(), string(env.Layout.Dispatch()))
	require.NoError(t, err)
	var produced int64
	ends.Each(func(o kadm.ListedOffset) { produced += o.Offset })
	require.EqualValues(t, 11, produced)
	dispatch.WaitLen(t, 11, time.Minute)
	got := map[string][]string{}
	for _, d := range dispatch.Dispatches(t) {
		got[d.JobID] = append(got[d.JobID], d.FireID)
	}
	for id, w := range want {
		require.ElementsMatch(t, w, got[id], id)
		require.Equal(t, codecs.StatusCompleted, record(id).Status, id)
	}
}
