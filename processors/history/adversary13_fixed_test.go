package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdversary13ResultWithAnotherSpellingOfTheFireID: a result whose
// fire_id writes the dispatch event's scheduled time another way (the same
// instant) is accepted, and lands on a fire of its own: the fire shows
// twice, once dispatched without an outcome, once with the outcome and no
// dispatch.
//
// Promise (docs/topics.md, Results): "`fire_id` | string, required | the
// dispatch event's `fire_id`"; "A record that breaks any of these rules is
// rejected to `chronos-rejects`"; issue 13: history "per job the last N
// fires ... with ... outcome" (one entry per fire).
//
// Reproduction: a job every 1s fires at 2026-06-01T00:00:01Z (fire_id
// "split@2026-06-01T00:00:01Z"); an executor reports it succeeded with
// fire_id "split@2026-06-01T02:00:01+02:00" (or ".000Z"), scheduled_at
// 2026-06-01T00:00:01Z.
//
// Observed: no reject; GET fires shows 2 entries for the one fire
// ("split@2026-06-01T00:00:01Z" status dispatched, and
// "split@2026-06-01T02:00:01+02:00" succeeded without dispatched_at).
// Cause: codecs.Result.checkFire accepts any RFC 3339 spelling
// (ParseFireID + time.Equal) and keeps the suffix as written, and the
// history keys fires by that suffix.
func TestAdversary13ResultWithAnotherSpellingOfTheFireID(t *testing.T) {
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	env.Start(env.Config())
	view := historyView(t, env)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Put("split", codecs.JobDef{Every: "1s"}, t0)
	env.WaitApplied()
	env.Tick(t0.Add(time.Second))
	dispatch.WaitLen(t, 1, time.Minute)
	d := dispatch.Dispatches(t)[0]
	require.Equal(t, "split@2026-06-01T00:00:01Z", d.FireID)

	res := `{"v":1,"fire_id":"split@2026-06-01T02:00:01+02:00","scheduled_at":"2026-06-01T00:00:01Z","status":"succeeded",` +
		`"started_at":"2026-06-01T00:00:01.5Z","finished_at":"2026-06-01T00:00:02Z"}`
	env.Produce(string(env.Layout.Results()), "split", []byte(res), t0.Add(2*time.Second))
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Results()), time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Dispatch()), time.Minute)
	testenv.Eventually(t, time.Minute, func() error {
		fires, _, err := view.Get("split")
		if err != nil {
			return err
		}
		if len(fires) == 0 {
			return fmt.Errorf("no fires yet")
		}
		if rejects.Len() > 0 {
			return nil // rejected: the promise holds
		}
		require.Len(t, fires, 1, "one fire, reported under another spelling of its fire_id, shows as %d fires: %+v / %+v",
			len(fires), fires[0], fires[len(fires)-1])
		require.Equal(t, codecs.StatusSucceeded, fires[0].Status)
		require.NotNil(t, fires[0].DispatchedAt)
		return nil
	})
}

// TestAdversary13FarFutureReportsFreezeAJobsHistory: well-formed results
// for fires in year 9999 take the slots of a job's history for good; the
// job's real fires are never shown again.
//
// Promise (issue 13): "History ... keeping per job the last N fires
// (default 50, configurable) with scheduled time, dispatch time, delay,
// outcome and duration"; docs/topics.md: "Each job keeps its last
// `--history-fires` fires". Nothing bounds how far ahead a report's
// scheduled_at may be ("Times are from 1970 to 9999").
//
// Reproduction: --history-fires 3; an executor (a clock bug, a replay of
// another system's ids) reports 3 fires of job "frozen" at
// 9999-12-31T23:59:5xZ; then the job fires 5 times and each is reported
// succeeded.
//
// Observed: GET fires shows only the 3 phantom fires of year 9999 (no
// dispatch time), none of the 5 real ones, and it stays so forever: a real
// fire is "older than all those kept" and is ignored. (Not tried: a bucket
// trigger record with a far-future timestamp, if that becomes its fires'
// scheduled_at, would do the same to every job of the bucket at once.)
func TestAdversary13FarFutureReportsFreezeAJobsHistory(t *testing.T) {
	phantomHistory(t, time.Date(9999, 12, 31, 23, 59, 50, 0, time.UTC), false)
}

// phantomHistory keeps 3 fires a job, reports 3 of its fires at phantom,
// phantom+1s, phantom+2s as skipped (with those record timestamps if
// stamped, else 2026-06-01), then lets it fire 5 times, each reported
// succeeded: the history must show real fires, not only the phantoms.
func phantomHistory(t *testing.T, phantom time.Time, stamped bool) {
	const keep = 3
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	cfg := env.Config()
	cfg.History.Fires = keep
	env.Start(cfg)
	view := historyView(t, env)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Put("frozen", codecs.JobDef{Every: "1s"}, t0)
	env.WaitApplied()
	for i := range keep {
		at := phantom.Add(time.Duration(i) * time.Second)
		rec := encodeResult(t, codecs.Result{JobID: "frozen", Suffix: at.Format(time.RFC3339Nano),
			ScheduledAt: at, Attempt: 1, Status: codecs.StatusSkipped, FinishedAt: at})
		if stamped {
			env.ProduceFuture(string(env.Layout.Results()), "frozen", rec, at)
		} else {
			env.Produce(string(env.Layout.Results()), "frozen", rec, t0)
		}
	}
	for s := 1; s <= 5; s++ {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	dispatch.WaitLen(t, 5, time.Minute)
	for _, d := range dispatch.Dispatches(t) {
		env.Produce(string(env.Layout.Results()), "frozen", encodeResult(t, codecs.Result{JobID: "frozen", Suffix: d.FireID[len(d.JobID)+1:],
			ScheduledAt: d.ScheduledAt, Attempt: 1, Status: codecs.StatusSucceeded, FinishedAt: d.ScheduledAt.Add(time.Second)}), t0.Add(6*time.Second))
	}
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Results()), time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Dispatch()), time.Minute)
	time.Sleep(time.Second) // the view
	fires, _, err := view.Get("frozen")
	require.NoError(t, err)
	var real []string
	for _, f := range fires {
		if f.DispatchedAt != nil {
			real = append(real, f.FireID+" "+f.Status)
		}
	}
	require.NotEmpty(t, real, "after 5 dispatched and reported fires the job's history holds none of them, only %d fires of %d (rejects: %d): %v",
		len(fires), phantom.Year(), rejects.Len(), fires)
}
