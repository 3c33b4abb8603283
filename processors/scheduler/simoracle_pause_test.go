package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// TestSimOracleLatePauseAfterCatchUp is seed 2820 reduced to the oracle's
// reading of one rule of docs/topics.md ("Updates, deletes and versions"):
// a paused job that still owed fires is handled "through the last of them
// dispatched", and "no fire_id is ever dispatched with two different
// payloads". A put on a paused job, with a record time 27 minutes behind
// the shard's time, owes its times from its ts; they all go out (a catch-up)
// before a late pause (ts before all of them) is applied; a late update
// follows. The update owes nothing before the shard's time: those fire_ids
// went out with the first payload. The oracle used to hand the pause over
// just before the first of those times, so it required the update's
// payload on all of them (163 missing fires in seed 2820, which the
// scheduler could only have sent as a second payload). When the catch-up
// did not go out before the pause, the update does take those times over.
func TestSimOracleLatePauseAfterCatchUp(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 54, 34, 0, time.UTC)
	now := time.Date(2026, 3, 1, 10, 22, 4, 0, time.UTC)
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, "2026-03-01T"+s+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	n := 0
	def := func(every time.Duration) *simDef {
		n++
		d := &simDef{id: "j", spec: schedule.Spec{Every: every}, grace: 7 * 24 * time.Hour, policy: codecs.MisfireSkip,
			payload: fmt.Sprintf(`{"put":%d}`, n)}
		s, err := schedule.Parse(d.spec)
		if err != nil {
			t.Fatal(err)
		}
		d.sched = s
		return d
	}
	send := func(o *simOracle, d *simDef, from, to time.Time) int {
		k := 0
		for _, ts := range simTimes(d.sched, from, to) {
			o.dispatched(codecs.Dispatch{V: 1, FireID: codecs.ScheduledFireID("j", ts), JobID: "j", Trigger: codecs.TriggerSchedule,
				ScheduledAt: ts, FiredAt: o.wm[0], Payload: []byte(d.payload)}, o.wm[0], time.Time{})
			k++
		}
		return k
	}
	// history runs the sequence; caughtUp: the late put's catch-up goes
	// out before the late pause is applied.
	history := func(caughtUp bool) (*simOracle, *simDef) {
		o := newSimOracle(1, 100)
		o.advance(0, t0)
		o.put(def(10*time.Second), 0, t0)
		o.pause("j", 0, at("09:54:35.083"))
		o.advance(0, now) // paused: owes nothing
		late := def(2 * time.Second)
		o.put(late, 0, at("09:54:49.244")) // active again, owes (09:54:49.244, now]
		if caughtUp {
			if k := send(o, late, at("09:54:49.244"), now); k != 818 {
				t.Fatalf("catch-up sent %d fires, want 818", k)
			}
		}
		o.pause("j", 0, at("09:54:49.244"))
		update := def(10 * time.Second)
		o.put(update, 0, at("09:54:57.516"))
		return o, update
	}

	t.Run("catch-up sent before the pause", func(t *testing.T) {
		o, update := history(true)
		if j := o.jobs["j"]; !j.F.Equal(now) {
			t.Errorf("after the update the job is handled through %s, want the shard's time %s (the catch-up sent everything up to it)", simFmt(j.F), simFmt(now))
		}
		o.advance(0, at("10:22:05"))
		o.advance(0, at("10:22:11"))
		if k := send(o, update, at("10:22:05"), at("10:22:11")); k != 1 {
			t.Fatalf("sent %d fires of the update, want 1 (10:22:10)", k)
		}
		o.finish()
		for _, v := range o.violations {
			t.Errorf("op %d %s: %s", v.step, v.kind, v.msg)
		}
	})

	t.Run("nothing sent before the pause", func(t *testing.T) {
		o, update := history(false)
		o.advance(0, at("10:22:05"))
		o.finish()
		// The update owes its times after its ts: 09:55:00 .. 10:22:00.
		want := len(simTimes(update.sched, at("09:54:57.516"), at("10:22:05")))
		missing := 0
		for _, v := range o.violations {
			if v.kind == "missing fire" && strings.Contains(v.msg, update.payload) {
				missing++
			}
		}
		if want != 163 || missing != want {
			t.Errorf("%d missing fires of the update reported, want %d (of 163 owed)", missing, want)
		}
	})
}
