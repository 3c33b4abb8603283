package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// genBackfillSpec returns a random valid schedule: every (with or without
// a start), cron with seconds in zones with DST (one with a 30-minute
// shift) and without, or a one-shot; sometimes with an end.
func genBackfillSpec(rng *rand.Rand, base time.Time) schedule.Spec {
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"}
	var s schedule.Spec
	switch rng.IntN(4) {
	case 0:
		s.Every = time.Duration(1+rng.IntN(7200)) * time.Second
		if rng.IntN(2) == 0 {
			s.Start = base.Add(time.Duration(rng.IntN(7200)-3600) * time.Second)
		}
	case 1, 2:
		crons := []string{"*/7 * * * * *", "0 */5 * * * *", "30 30 1-3 * * *", "0 0 2 * * *", "0 15 * * * *", "0 0 12 L * *", "0 0 9 * * 1-5"}
		s.Cron, s.TZ = crons[rng.IntN(len(crons))], zones[rng.IntN(len(zones))]
		if s.TZ != "" && rng.IntN(3) == 0 {
			s.DST = schedule.DST{Gap: []string{"shift", "skip"}[rng.IntN(2)], Overlap: []string{"first", "last", "both"}[rng.IntN(3)]}.Normalize()
		}
	default:
		s.At = base.Add(time.Duration(rng.IntN(86400)-43200) * time.Second)
	}
	if rng.IntN(4) == 0 && s.At.IsZero() {
		s.End = base.Add(time.Duration(rng.IntN(86400)) * time.Second)
	}
	return s
}

// oracleTimes is every time of s in [from, to), walked with the schedule's
// own Next from the start of time's side: the first time after from-1ns.
func oracleTimes(s schedule.Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

// TestBackfillAgainstOracle generates schedules and ranges and runs each
// backfill to its end through its decisions (startBackfill, then
// decideBackfillStep at shard times that repeat, jump and stall, with
// pauses, and with crashes: a step's fires go out but its record is not
// written, as when the process dies between the two). Every time of the
// range must be dispatched, only those, each with its fire_id; a time may
// go out again only through a crashed step; the record's progress counts
// each once, no step exceeds the rate, and the finished backfill leaves
// the record and the shard's registry.
func TestBackfillAgainstOracle(t *testing.T) {
	t.Parallel()
	cache := schedule.NewCache(100)
	base := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC) // DST changes in Europe and (a week earlier) the US
	seeds := 400
	if testing.Short() {
		seeds = 100
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 14))
		spec := genBackfillSpec(rng, base)
		sched, err := schedule.Parse(spec)
		require.NoError(t, err, "seed %d: %+v", seed, spec)
		from := base.Add(time.Duration(rng.IntN(5*86400)-86400) * time.Second)
		to := from.Add(time.Duration(1+rng.IntN(3*86400)) * time.Second)
		want := oracleTimes(sched, from, to)
		name := fmt.Sprintf("seed %d %+v [%s, %s)", seed, spec, from.Format(time.RFC3339), to.Format(time.RFC3339))

		limit := int64(1 + rng.IntN(len(want)+3))
		n, first := codecs.CountBackfill(sched, from, to, limit)
		require.Equal(t, min(int64(len(want)), limit+1), n, name)
		if len(want) > 0 {
			require.Equal(t, want[0], first, name)
		}

		ts := to.Add(time.Duration(rng.IntN(3600)) * time.Second)
		job := codecs.Job{Spec: spec, Payload: []byte(`{"n":1}`), MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: time.Minute}
		old := &codecs.JobRecord{Version: 5, Status: codecs.StatusActive, Job: job, CreatedAt: from}
		in := commandInput{Cmd: codecs.Command{Op: codecs.OpBackfill, ID: "j", From: from, To: to}, Old: old, TS: ts, Partition: 2, Offset: int64(seed)}
		eff, err := applyCommand(in, cache)
		if len(want) == 0 || len(want) > codecs.MaxBackfillFires {
			require.Error(t, err, name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, &codecs.ShardTrigger{Kind: codecs.KindBackfillJoin, T: ts, Job: "j", TriggerID: codecs.BackfillID(2, int64(seed))}, eff.Loop, name)
		rec := eff.Record
		require.Equal(t, old.Version, rec.Version, "a backfill does not change the version")
		require.Equal(t, int64(len(want)), rec.Backfill.Total, name)
		require.Nil(t, old.Backfill, "the decision changed its input")

		got := map[time.Time]int{}
		crashed := map[time.Time]bool{}
		rate := 1 + rng.IntN(50)
		stepLimit := 1 + rng.IntN(30)
		shard := ts
		id := rec.Backfill.ID
		for step := 0; ; step++ {
			require.Less(t, step, 100_000, "%s: the backfill does not end", name)
			switch rng.IntN(10) {
			case 0: // the same shard time again (a step sent twice)
			case 1:
				shard = shard.Add(time.Duration(rng.IntN(600)) * time.Second) // an outage
			default:
				shard = shard.Add(time.Duration(1+rng.IntN(2000)) * time.Millisecond)
			}
			if rng.IntN(15) == 0 { // pause or resume
				next := *rec
				next.Status = map[codecs.Status]codecs.Status{codecs.StatusActive: codecs.StatusPaused, codecs.StatusPaused: codecs.StatusActive}[rec.Status]
				rec = &next
			}
			before := *rec.Backfill
			st := decideBackfillStep(rec, codecs.ShardTrigger{Kind: codecs.KindBackfill, T: shard, TriggerID: id}, rate, stepLimit, cache, nil)
			require.Equal(t, before, *rec.Backfill, "the decision changed its input")
			if rec.Status == codecs.StatusPaused || !shard.After(before.LastStep) {
				require.Empty(t, st.Fires, "%s: a paused job or a repeated shard time fires nothing", name)
				require.Nil(t, st.Rec)
				require.False(t, st.Leave)
				continue
			}
			require.LessOrEqual(t, len(st.Fires), stepLimit)
			if !before.LastStep.IsZero() {
				require.LessOrEqual(t, int64(len(st.Fires)), int64(rate)*int64(shard.Sub(before.LastStep))/int64(time.Second), "%s: over the rate", name)
			}
			crash := rng.IntN(8) == 0
			for _, at := range st.Fires {
				got[at]++
				if crash {
					crashed[at] = true
				}
			}
			if crash || st.Rec == nil {
				continue // dispatched, but the record was not written
			}
			rec = st.Rec
			if st.Leave {
				require.Nil(t, rec.Backfill, name)
				break
			}
			require.False(t, st.Leave)
			require.Equal(t, before.Done+int64(len(st.Fires)), rec.Backfill.Done)
			require.Equal(t, shard, rec.Backfill.LastStep)
		}
		require.Len(t, got, len(want), "%s: dispatched times", name)
		for _, at := range want {
			require.GreaterOrEqual(t, got[at], 1, "%s: %s never dispatched", name, at)
			if got[at] > 1 {
				require.True(t, crashed[at], "%s: %s dispatched %d times without a crash", name, at, got[at])
			}
		}
		// After the end, a late step finds no backfill and leaves.
		st := decideBackfillStep(rec, codecs.ShardTrigger{Kind: codecs.KindBackfill, T: shard.Add(time.Second), TriggerID: id}, rate, stepLimit, cache, nil)
		require.Equal(t, backfillStep{Leave: true}, st)
	}
}

// TestStartBackfillRefuses is the table of backfill and cancel commands
// the scheduler refuses or ignores.
func TestStartBackfillRefuses(t *testing.T) {
	t.Parallel()
	cache := schedule.NewCache(10)
	active := &codecs.JobRecord{Version: 3, Status: codecs.StatusActive, Job: every10(), CreatedAt: cmdSec(-1000)}
	busy := *active
	busy.Backfill = &codecs.Backfill{ID: "b-0-1", From: cmdSec(-100), To: cmdSec(-50), Next: cmdSec(-90), Total: 5, Done: 1}
	bf := func(from, to int) codecs.Command {
		return codecs.Command{Op: codecs.OpBackfill, ID: "j", From: cmdSec(from), To: cmdSec(to)}
	}
	full := codecs.ShardRecord{}
	for i := range codecs.MaxBackfillsPerShard {
		full.Backfills = append(full.Backfills, codecs.BackfillRef{Job: fmt.Sprint(i), ID: "b"})
	}
	for _, tc := range []struct {
		name  string
		in    commandInput
		code  string
		field string
	}{
		{"unknown job", commandInput{Cmd: bf(-100, -50), TS: cmdSec(0)}, codecs.CodeUnknownJob, "id"},
		{"one in progress", commandInput{Cmd: bf(-100, -50), Old: &busy, TS: cmdSec(0)}, codecs.CodeInvalidField, "from"},
		{"to after the command", commandInput{Cmd: bf(-100, 1), Old: active, TS: cmdSec(0)}, codecs.CodeInvalidField, "to"},
		{"no time in the range", commandInput{Cmd: bf(-9, -1), Old: active, TS: cmdSec(0)}, codecs.CodeInvalidField, "from"},
		{"too many times", commandInput{Cmd: bf(-10*(codecs.MaxBackfillFires+1), 0), Old: active, TS: cmdSec(0)}, codecs.CodeInvalidField, "to"},
		{"shard full", commandInput{Cmd: bf(-100, -50), Old: active, TS: cmdSec(0), Shard: full}, codecs.CodeInvalidField, "from"},
	} {
		_, err := applyCommand(tc.in, cache)
		var ce *codecs.Error
		require.ErrorAs(t, err, &ce, tc.name)
		require.Equal(t, tc.code, ce.Code, tc.name)
		require.Equal(t, tc.field, ce.Field, tc.name)
	}
	// Exactly the maximum is taken.
	eff, err := applyCommand(commandInput{Cmd: bf(-10*codecs.MaxBackfillFires, 0), Old: active, TS: cmdSec(0)}, cache)
	require.NoError(t, err)
	require.EqualValues(t, codecs.MaxBackfillFires, eff.Record.Backfill.Total)

	// Cancel: drops the backfill and leaves the registry; without one, nothing.
	eff, err = applyCommand(commandInput{Cmd: codecs.Command{Op: codecs.OpCancelBackfill, ID: "j"}, Old: &busy, TS: cmdSec(0)}, cache)
	require.NoError(t, err)
	require.Nil(t, eff.Record.Backfill)
	require.NotNil(t, busy.Backfill, "the decision changed its input")
	require.Equal(t, &codecs.ShardTrigger{Kind: codecs.KindBackfillLeave, T: cmdSec(0), Job: "j", TriggerID: "b-0-1"}, eff.Loop)
	eff, err = applyCommand(commandInput{Cmd: codecs.Command{Op: codecs.OpCancelBackfill, ID: "j"}, Old: active, TS: cmdSec(0)}, cache)
	require.NoError(t, err)
	require.Equal(t, commandEffect{}, eff)

	// A resume keeps it, and its next step counts one second, not the pause.
	pausedBusy := busy
	pausedBusy.Status, pausedBusy.Through, pausedBusy.NotBefore = codecs.StatusPaused, cmdSec(-5), cmdSec(-5)
	pausedBusy.Backfill = &codecs.Backfill{ID: "b-0-1", From: cmdSec(-100), To: cmdSec(-50), Next: cmdSec(-90), Total: 5, Done: 1, LastStep: cmdSec(-5)}
	eff, err = applyCommand(commandInput{Cmd: codecs.Command{Op: codecs.OpResume, ID: "j"}, Old: &pausedBusy, TS: cmdSec(0), Handled: cmdSec(0)}, cache)
	require.NoError(t, err)
	want := *pausedBusy.Backfill
	want.LastStep = time.Time{}
	require.Equal(t, &want, eff.Record.Backfill)
	require.Equal(t, cmdSec(-5), pausedBusy.Backfill.LastStep, "the decision changed its input")

	// A put drops it; a pause keeps it.
	eff, err = applyCommand(commandInput{Cmd: codecs.Command{Op: codecs.OpPut, ID: "j", Job: every10()}, Old: &busy, TS: cmdSec(0), Handled: cmdSec(0)}, cache)
	require.NoError(t, err)
	require.Nil(t, eff.Record.Backfill)
	eff, err = applyCommand(commandInput{Cmd: codecs.Command{Op: codecs.OpPause, ID: "j"}, Old: &busy, TS: cmdSec(0), Handled: cmdSec(0)}, cache)
	require.NoError(t, err)
	require.Equal(t, busy.Backfill, eff.Record.Backfill)
}

// TestStepBudget: rate per second of shard time since the last step, one
// second's worth for the first, at most limit, nothing for a step too soon.
func TestStepBudget(t *testing.T) {
	t.Parallel()
	t0 := cmdSec(0)
	require.Equal(t, 100, stepBudget(time.Time{}, t0, 100, 1000))
	require.Equal(t, 50, stepBudget(t0, t0.Add(500*time.Millisecond), 100, 1000))
	require.Equal(t, 0, stepBudget(t0, t0.Add(5*time.Millisecond), 100, 1000))
	require.Equal(t, 1000, stepBudget(t0, t0.Add(time.Minute), 100, 1000))
	require.Equal(t, 60*MaxBackfillRate, stepBudget(t0, t0.Add(1000*time.Hour), MaxBackfillRate, 1<<40), "an outage is made up for one minute at most")
}
