package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

var t0 = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)

func ev(job string, at time.Time, payload string, missed int64) codecs.Dispatch {
	d := codecs.Dispatch{V: 1, FireID: codecs.ScheduledFireID(job, at), JobID: job, Trigger: codecs.TriggerSchedule,
		ScheduledAt: at, FiredAt: at, Missed: missed}
	if payload != "" {
		d.Payload = json.RawMessage(payload)
	}
	return d
}

func TestEveryArithmetic(t *testing.T) {
	for _, c := range []struct {
		def         codecs.JobDef
		after, upTo time.Time
		want        []time.Time
	}{
		{codecs.JobDef{Every: "10s"}, t0, t0.Add(30 * time.Second), []time.Time{t0.Add(10 * time.Second), t0.Add(20 * time.Second), t0.Add(30 * time.Second)}},
		{codecs.JobDef{Every: "10s"}, t0.Add(-1), t0.Add(5 * time.Second), []time.Time{t0}},
		{codecs.JobDef{Every: "10s", Start: t0.Add(3 * time.Second).Format(time.RFC3339)}, t0.Add(-time.Hour), t0.Add(25 * time.Second),
			[]time.Time{t0.Add(3 * time.Second), t0.Add(13 * time.Second), t0.Add(23 * time.Second)}},
		// after before the start but on a k*every of the (negative) grid
		{codecs.JobDef{Every: "10s", Start: t0.Add(3 * time.Second).Format(time.RFC3339)}, t0.Add(13 * time.Second), t0.Add(23 * time.Second),
			[]time.Time{t0.Add(23 * time.Second)}},
		{codecs.JobDef{Every: "1m", End: t0.Add(2 * time.Minute).Format(time.RFC3339)}, t0, t0.Add(time.Hour),
			[]time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute)}},
		{codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0, t0.Add(2 * time.Hour), []time.Time{t0.Add(time.Hour)}},
		{codecs.JobDef{At: t0.Add(time.Hour).Format(time.RFC3339)}, t0.Add(time.Hour), t0.Add(2 * time.Hour), nil},
		{codecs.JobDef{Cron: "0 */30 * * * *"}, t0, t0.Add(time.Hour), []time.Time{t0.Add(30 * time.Minute), t0.Add(time.Hour)}},
	} {
		j, err := parseDef(c.def)
		require.NoError(t, err)
		require.Equal(t, c.want, j.fires(c.after, c.upTo), "%+v", c.def)
	}
}

func TestCleanRun(t *testing.T) {
	jobs := []Job{{ID: "a", Def: codecs.JobDef{Every: "1s", Payload: json.RawMessage(`{ "x": 1 }`)}, PutAt: t0}}
	p, err := Expect(jobs, Options{From: t0.Add(-time.Hour), To: t0.Add(3 * time.Second)})
	require.NoError(t, err)
	var obs []Observed
	for s := 1; s <= 4; s++ { // the 4th is outside the window
		at := t0.Add(time.Duration(s) * time.Second)
		obs = append(obs, Observed{Dispatch: ev("a", at, `{"x":1}`, 0), Received: at.Add(time.Duration(s) * 100 * time.Millisecond)})
	}
	r := p.Check(obs)
	require.NoError(t, r.Err())
	require.Equal(t, 3, r.Expected)
	require.Equal(t, 3, r.Delivered)
	require.Equal(t, 1, r.OutsideWindow)
	require.Equal(t, 3, r.Lateness.N)
	require.Equal(t, 100*time.Millisecond, r.Lateness.Min)
	require.Equal(t, 300*time.Millisecond, r.Lateness.Max)
	t.Log(r)
}

func TestMissingDuplicateUnexpected(t *testing.T) {
	jobs := []Job{{ID: "a", Def: codecs.JobDef{Every: "1s"}, PutAt: t0.Add(2 * time.Second)}}
	p, err := Expect(jobs, Options{From: t0, To: t0.Add(5 * time.Second)})
	require.NoError(t, err)
	require.Len(t, p.Expected, 3) // 3, 4, 5: strictly after the put
	obs := FromDispatches([]codecs.Dispatch{
		ev("a", t0.Add(1*time.Second), "", 0), // before the put: unexpected
		ev("a", t0.Add(3*time.Second), "", 0),
		ev("a", t0.Add(3*time.Second), "", 0), // identical repeat
		ev("a", t0.Add(3*time.Second), "", 0), // again
		ev("a", t0.Add(5*time.Second), "", 0),
		ev("a", t0.Add(5*time.Second), `"other"`, 0), // repeat with a different payload
		ev("ghost", t0.Add(3*time.Second), "", 0),    // unknown job
		{FireID: "a@manual-1", JobID: "a", Trigger: codecs.TriggerManual, ScheduledAt: t0},
	})
	r := p.Check(obs)
	t.Log(r)
	require.Equal(t, []string{"a@2026-04-01T00:00:04Z"}, r.Missing)
	require.Equal(t, 2, r.Delivered)
	require.Equal(t, 3, r.Duplicates)
	require.Equal(t, 2, r.DuplicateIDs)
	require.Equal(t, []string{"a@2026-04-01T00:00:05Z"}, r.DuplicateMismatches)
	require.Equal(t, []string{"a@2026-04-01T00:00:01Z", "ghost@2026-04-01T00:00:03Z"}, r.Unexpected)
	require.Equal(t, 1, r.NotScheduled)
	require.Error(t, r.Err())
}

func TestWrongPayloadAndFireID(t *testing.T) {
	jobs := []Job{{ID: "a", Def: codecs.JobDef{Every: "1s", Payload: json.RawMessage(`1`)}}}
	p, err := Expect(jobs, Options{From: t0, To: t0.Add(2 * time.Second)})
	require.NoError(t, err)
	bad := ev("a", t0.Add(2*time.Second), `1`, 0)
	bad.FireID = codecs.ScheduledFireID("a", t0.Add(2*time.Second))
	bad.ScheduledAt = t0.Add(2*time.Second - time.Millisecond) // fire_id disagrees with scheduled_at
	r := p.Check(FromDispatches([]codecs.Dispatch{ev("a", t0.Add(time.Second), `2`, 0), bad}))
	require.Len(t, r.Mismatches, 2, "%v", r.Mismatches)
}

// TestMisfirePolicies mirrors docs/topics.md: every 1m, down from 12:00:30,
// next advance to 12:10:00.
func TestMisfirePolicies(t *testing.T) {
	noon := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	m := func(n int) time.Time { return noon.Add(time.Duration(n) * time.Minute) }
	jobs := []Job{
		{ID: "once", Def: codecs.JobDef{Every: "1m"}},
		{ID: "skip", Def: codecs.JobDef{Every: "1m", MisfirePolicy: codecs.MisfireSkip}},
		{ID: "all", Def: codecs.JobDef{Every: "1m", MisfirePolicy: codecs.MisfireFireAll}},
	}
	p, err := Expect(jobs, Options{From: noon.Add(-time.Minute), To: m(10), Advances: []time.Time{noon, noon.Add(30 * time.Second), m(10), m(5)}})
	require.NoError(t, err)
	want := map[string]int64{
		"once@" + m(0).Format(time.RFC3339): 0, "once@" + m(8).Format(time.RFC3339): 7,
		"once@" + m(9).Format(time.RFC3339): 0, "once@" + m(10).Format(time.RFC3339): 0,
		"skip@" + m(0).Format(time.RFC3339): 0, "skip@" + m(9).Format(time.RFC3339): 8, "skip@" + m(10).Format(time.RFC3339): 0,
	}
	for i := 0; i <= 10; i++ {
		want["all@"+m(i).Format(time.RFC3339)] = 0
	}
	got := map[string]int64{}
	for id, e := range p.Expected {
		got[id] = e.Missed
	}
	require.Equal(t, want, got)
	require.Len(t, p.Allowed, 7+8)

	var obs []codecs.Dispatch
	for id, e := range p.Expected {
		d := ev(e.JobID, e.ScheduledAt, "", e.Missed)
		require.Equal(t, id, d.FireID)
		obs = append(obs, d)
	}
	r := p.Check(FromDispatches(obs))
	require.NoError(t, r.Err())
	require.Equal(t, 15, r.AllowedMissing)
	// A skipped fire that shows up anyway is unexpected.
	r = p.Check(FromDispatches(append(obs, ev("skip", m(3), "", 0))))
	require.Equal(t, 1, r.AllowedDelivered)
	require.Len(t, r.Unexpected, 1)
}

func TestFireAllBound(t *testing.T) {
	jobs := []Job{{ID: "all", Def: codecs.JobDef{Every: "1s", MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: "0s"}}}
	p, err := Expect(jobs, Options{From: t0, To: t0.Add(150 * time.Second), Advances: []time.Time{t0, t0.Add(150 * time.Second)}})
	require.NoError(t, err)
	require.Len(t, p.Expected, 101) // 100 late + the on-time 150
	require.Len(t, p.Allowed, 49)
	require.Equal(t, int64(49), p.Expected[codecs.ScheduledFireID("all", t0.Add(50*time.Second))].Missed)
}

func TestFromRecords(t *testing.T) {
	d := ev("a", t0.Add(time.Second), `{"k":"v"}`, 0)
	raw := codecs.AppendDispatch(nil, &d)
	obs, err := FromRecords([]*kgo.Record{{Key: []byte("a"), Value: raw, Timestamp: t0.Add(1500 * time.Millisecond)}})
	require.NoError(t, err)
	require.Equal(t, d.FireID, obs[0].Dispatch.FireID)
	require.Equal(t, t0.Add(1500*time.Millisecond), obs[0].Received)
	_, err = FromRecords([]*kgo.Record{{Key: []byte("b"), Value: raw}})
	require.Error(t, err)
}
