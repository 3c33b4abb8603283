package history_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/history"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// TestHistoryRestartsMatchTheOracle runs the history group alone
// (--history-only) on the test broker and writes generated dispatch events
// and results (duplicates, outcomes before their dispatch) in rounds. After
// each round the group is stopped while it is still folding the round, and
// started again: on the same data dir (its stores persist the changelog
// offset only every instance.HistoryStoreOffsetEvery offsets and on Close,
// so the restart resumes from the in-memory offset written at Close), or on
// a new one (a lost disk: recovered from the changelog). The history each
// job ends with must equal the oracle's over everything written: a restart
// neither loses a fire nor counts one twice.
func TestHistoryRestartsMatchTheOracle(t *testing.T) {
	t.Parallel()
	const keep, rounds = 6, 4
	env := testenv.New(t, 3)
	cfg := env.Config()
	cfg.History.Only, cfg.History.Fires = true, keep
	inst := env.Start(cfg)
	view := historyView(t, env)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(13, seed))
	t.Logf("seed %d", seed)

	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	jobs := []string{"nightly-a", "nightly-b", "nightly-c", "nightly-d", "nightly-e"}
	var ds []codecs.Dispatch
	var rs []codecs.Result
	for round := range rounds {
		var dkeys, rkeys []string
		var dvals, rvals [][]byte
		for _, id := range jobs {
			for range 1 + rng.IntN(5) {
				at := t0.Add(time.Duration(rng.IntN(40)) * time.Second)
				d := codecs.Dispatch{V: codecs.DispatchVersion, FireID: codecs.ScheduledFireID(id, at), JobID: id, Trigger: codecs.TriggerSchedule,
					ScheduledAt: at, FiredAt: at.Add(time.Duration(rng.IntN(900)) * time.Millisecond)}
				for range 1 + rng.IntN(2) { // sometimes twice: a producer retry
					ds = append(ds, d)
					dkeys, dvals = append(dkeys, id), append(dvals, codecs.AppendDispatch(nil, &d))
				}
				if rng.IntN(2) == 0 {
					// An outcome, sometimes for a fire not dispatched yet.
					if rng.IntN(4) == 0 {
						at = at.Add(time.Hour)
					}
					r := codecs.Result{JobID: id, Suffix: codecs.ScheduledFireID(id, at)[len(id)+1:], ScheduledAt: at, Attempt: 1 + rng.IntN(2),
						Status: []string{codecs.StatusStarted, codecs.StatusSucceeded, codecs.StatusFailed}[rng.IntN(3)], StartedAt: at.Add(time.Second)}
					if r.Status != codecs.StatusStarted {
						r.FinishedAt = r.StartedAt.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
					}
					rs = append(rs, r)
					rkeys, rvals = append(rkeys, id), append(rvals, encodeResult(t, r))
				}
			}
		}
		env.ProduceMany(string(env.Layout.Dispatch()), dkeys, dvals, t0)
		env.ProduceMany(string(env.Layout.Results()), rkeys, rvals, t0)
		// Stop while the group is (likely) still folding the round.
		inst.Stop()
		if round%2 == 1 {
			cfg.DataDir = t.TempDir() // a lost disk
		}
		inst = env.Start(cfg)
	}
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Dispatch()), time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Results()), time.Minute)
	for _, id := range jobs {
		var jd []codecs.Dispatch
		for _, d := range ds {
			if d.JobID == id {
				jd = append(jd, d)
			}
		}
		var jr []codecs.Result
		for _, r := range rs {
			if r.JobID == id {
				jr = append(jr, r)
			}
		}
		want := views.FiresOf(id, codecs.History{Fires: history.Oracle(jd, jr, keep)})
		testenv.Eventually(t, time.Minute, func() error {
			fires, _, err := view.Get(id)
			if err != nil {
				return err
			}
			if !slices.EqualFunc(fires, want, fireEqual) {
				return fmt.Errorf("job %s: history has %d fires %+v, want %d %+v", id, len(fires), fires, len(want), want)
			}
			return nil
		})
	}
	require.NotEmpty(t, ds)
}
