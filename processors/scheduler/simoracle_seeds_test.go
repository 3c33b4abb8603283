package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// simOracleKit builds definitions and dispatches for the oracle tests of
// one job "j" on partition 0.
type simOracleKit struct {
	t *testing.T
	n int
}

func (k *simOracleKit) at(s string) time.Time {
	ts, err := time.Parse(time.RFC3339Nano, "2026-03-01T"+s+"Z")
	if err != nil {
		k.t.Fatal(err)
	}
	return ts
}

func (k *simOracleKit) def(every, grace time.Duration, policy string) *simDef {
	k.n++
	d := &simDef{id: "j", spec: schedule.Spec{Every: every}, grace: grace, policy: policy, payload: fmt.Sprintf(`{"put":%d}`, k.n)}
	s, err := schedule.Parse(d.spec)
	if err != nil {
		k.t.Fatal(err)
	}
	d.sched = s
	return d
}

// send dispatches d's scheduled fire at ts with missed, by an advance to curT.
func (k *simOracleKit) send(o *simOracle, d *simDef, ts time.Time, missed int64, curT time.Time) {
	o.dispatched(codecs.Dispatch{V: 1, FireID: codecs.ScheduledFireID("j", ts), JobID: "j", Trigger: codecs.TriggerSchedule,
		ScheduledAt: ts, FiredAt: curT, Missed: missed, Payload: []byte(d.payload)}, curT, time.Time{})
}

// kinds lists the violations' kinds (and bugs) in order.
func simViolationKinds(o *simOracle) []string {
	var ks []string
	for _, v := range o.violations {
		ks = append(ks, v.kind+" ["+v.bug+"]")
	}
	return ks
}

// TestSimOracleMidAdvancePauseSendsItsLateTime is seed 4726 reduced: a job
// every 2 s, grace 0, fire_once, handled through 09:28:40; an advance to
// 09:28:46 (the clock ahead of the producers') is under way and has not
// reached the job when a pause with ts 09:28:42.631 is applied.
// docs/topics.md: a pause "first dispatches what the job owes up to the
// earlier of ts and the shard's time" and "fires the job owed at or before
// ts that are not dispatched yet (an advance under way, a catch-up) still go
// out". The job owes 42 up to ts; it is late, and fire_once sends the latest
// late time of those, 42 with missed 0. The oracle only knew the advance's
// plan for all three times (44 with missed 1, 46), so it called 42 an
// unexpected fire. Once the advance has reached the job (44 and 46 out,
// 42 counted as missed), 42 is still not owed, and no time after the
// pause's ts may go out.
func TestSimOracleMidAdvancePauseSendsItsLateTime(t *testing.T) {
	k := &simOracleKit{t: t}
	history := func(reached bool) (*simOracle, *simDef) {
		o := newSimOracle(1, 100)
		o.advance(0, k.at("09:28:40"))
		d := k.def(2*time.Second, 0, codecs.MisfireFireOnce)
		o.put(d, 0, k.at("09:28:40"))
		T := k.at("09:28:46")
		o.advance(0, T)
		o.busy[0][advChain(T)]++ // its continuation is in flight
		if reached {
			k.send(o, d, k.at("09:28:44"), 1, T)
			k.send(o, d, k.at("09:28:46"), 0, T)
		}
		o.pause("j", 0, k.at("09:28:42.631"))
		return o, d
	}

	t.Run("advance has not reached the job", func(t *testing.T) {
		o, d := history(false)
		k.send(o, d, k.at("09:28:42"), 0, k.at("09:28:46"))
		o.finish()
		if len(o.violations) != 0 {
			t.Errorf("violations %v, want none: 42 is owed before the pause and goes out by it", simViolationKinds(o))
		}
	})

	t.Run("a time after the pause still may not go out", func(t *testing.T) {
		o, d := history(false)
		k.send(o, d, k.at("09:28:44"), 1, k.at("09:28:46"))
		if ks := simViolationKinds(o); len(ks) != 1 || !strings.HasPrefix(ks[0], "fire while paused") {
			t.Errorf("violations %v, want one fire while paused (44 is after the pause's ts)", ks)
		}
	})

	t.Run("advance reached the job first", func(t *testing.T) {
		o, d := history(true)
		k.send(o, d, k.at("09:28:42"), 0, k.at("09:28:46"))
		if ks := simViolationKinds(o); len(ks) != 1 || !strings.HasPrefix(ks[0], "unexpected fire") {
			t.Errorf("violations %v, want one unexpected fire (42 was counted as missed on 44)", ks)
		}
	})
}

// TestSimOracleRestartInOvertakingAdvance is seed 5181 reduced: a job every
// 30 s, grace 20 s, fire_once, handled through 09:38:15.699. An advance to
// 09:40:13 sends 39:30 (missed 2) and 40:00 and moves the job's index entry
// locally; before it finishes, an advance to 10:09:32 overtakes it and its
// first delivery crashes; the instance restarts on a rebuilt index (the
// table still says 09:38:30). docs/reliability.md: after a restart during
// an advance "the next owner may re-count as missed times already handled";
// the redelivered advance sends 10:09:00 with missed 61 (38:30 .. 10:08:30)
// instead of 57. The oracle had fixed the count at the first delivery,
// before the restart. Without a restart the count is still checked, and
// the restart does not make the fires optional.
func TestSimOracleRestartInOvertakingAdvance(t *testing.T) {
	k := &simOracleKit{t: t}
	history := func(restart bool) (*simOracle, *simDef) {
		o := newSimOracle(1, 100)
		o.advance(0, k.at("09:38:15"))
		d := k.def(30*time.Second, 20*time.Second, codecs.MisfireFireOnce)
		o.put(d, 0, k.at("09:38:15.699"))
		T1 := k.at("09:40:13")
		o.advance(0, T1)
		o.busy[0][advChain(T1)]++
		k.send(o, d, k.at("09:39:30"), 2, T1)
		k.send(o, d, k.at("09:40:00"), 0, T1)
		o.advance(0, k.at("10:09:32"))
		if restart {
			o.moved(0)
		}
		return o, d
	}
	T2 := k.at("10:09:32")

	t.Run("restart: re-counted", func(t *testing.T) {
		o, d := history(true)
		k.send(o, d, k.at("10:09:00"), 61, T2)
		k.send(o, d, k.at("10:09:30"), 0, T2)
		o.finish()
		if len(o.violations) != 0 {
			t.Errorf("violations %v, want none", simViolationKinds(o))
		}
	})

	t.Run("restart: still owed", func(t *testing.T) {
		o, d := history(true)
		k.send(o, d, k.at("10:09:00"), 61, T2)
		o.finish()
		if ks := simViolationKinds(o); len(ks) != 1 || !strings.HasPrefix(ks[0], "missing fire") {
			t.Errorf("violations %v, want one missing fire (10:09:30)", ks)
		}
	})

	t.Run("no restart: count checked", func(t *testing.T) {
		o, d := history(false)
		k.send(o, d, k.at("10:09:00"), 61, T2)
		if ks := simViolationKinds(o); len(ks) != 1 || !strings.HasPrefix(ks[0], "misfire count") {
			t.Errorf("violations %v, want one misfire count (57 without a restart)", ks)
		}
	})
}

// TestSimOracleReuseLabelsItsIncarnation is seed 4232's labelling reduced:
// an incarnation sends 09:43:40 with its payload; it is deleted with its
// handled time lost (the known open finding "re-put reuses a fire_id"),
// and a re-put, after a late update of the first incarnation, sends 09:43:40
// again with its own payload. Both violations this makes (two payloads, and
// a fire the re-put does not owe) are that finding, not "6 late update".
func TestSimOracleReuseLabelsItsIncarnation(t *testing.T) {
	k := &simOracleKit{t: t}
	o := newSimOracle(1, 100)
	o.advance(0, k.at("09:43:30"))
	first := k.def(10*time.Second, 168*time.Hour, codecs.MisfireFireOnce)
	o.put(first, 0, k.at("09:43:30"))
	update := k.def(10*time.Second, 168*time.Hour, codecs.MisfireFireOnce)
	o.put(update, 0, k.at("09:43:29")) // a late update
	if !o.jobs["j"].lateUpdate {
		t.Fatal("the update before the job's handled time is not a late update: the test no longer reproduces the label")
	}
	T := k.at("09:43:41")
	o.advance(0, T)
	k.send(o, update, k.at("09:43:40"), 0, T)
	o.del("j", 0, k.at("09:43:41"))
	reput := k.def(5*time.Second, 168*time.Hour, codecs.MisfireFireOnce)
	o.put(reput, 0, k.at("09:43:39.917"))
	k.send(o, reput, k.at("09:43:40"), 0, T)
	ks := simViolationKinds(o)
	want := []string{"two payloads [" + simKnownReuse + "]", "unexpected fire [" + simKnownReuse + "]"}
	if fmt.Sprint(ks) != fmt.Sprint(want) {
		t.Errorf("violations %v, want %v", ks, want)
	}
}
