//go:build adversary13

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
