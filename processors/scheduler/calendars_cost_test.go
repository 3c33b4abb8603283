// Named calendars in due decisions: what one decision looks up (issue 14,
// adversary 14c).
package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

type countingCalendars struct {
	dates map[schedule.Date]bool
	calls int
	limit int
}

func (c *countingCalendars) HasDate(name string, d schedule.Date) bool {
	c.calls++
	if c.calls > c.limit {
		panic(fmt.Sprintf("more than %d calendar lookups", c.limit))
	}
	return name == "hol" && c.dates[d]
}

func consecutiveDays(from time.Time, n int) map[schedule.Date]bool {
	m := make(map[schedule.Date]bool, n)
	for i := range n {
		m[schedule.DateOf(from.AddDate(0, 0, i))] = true
	}
	return m
}

// decideBounded runs one due decision and reports the lookups it took, or
// that it passed the limit.
func decideBounded(d store.Due, value []byte, t time.Time, cals *countingCalendars) (dec dueDecision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return decideDue(d, value, t, 1<<30, 100, schedule.NewCache(10), cals, nil), nil
}

// TestCalendarJobWakeLooksAtItsOwnDay (adversary 14c's
// TestAdversary14cCalendarJobDueEverySecond, fixed: the advance looks up
// calendars only for the times it fires, up to its time, and decides each
// later one when it is due). A job every 1s naming a calendar: each advance the job is due again (the index
// keeps the calendar-free schedule, whose next time is the next second)
// and each decision jumps day by day over the whole run of excluded
// dates, so the CPU a job costs per second of shard time grows with the
// calendar: with 5000 consecutive dates, how many lookups over 60 one-second
// advances? A job outside any calendar costs 60 decisions; the bound
// asserted is 100 lookups per decision.
func TestCalendarJobWakeLooksAtItsOwnDay(t *testing.T) {
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	job := codecs.Job{Spec: schedule.Spec{Every: time.Second, Exclude: schedule.Exclusions{Calendars: []string{"hol"}}},
		MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: time.Minute}
	rec := codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: job}
	value := codecs.EncodeJobRecord(&rec)
	cals := &countingCalendars{dates: consecutiveDays(day, 5000), limit: 100_000_000}
	at := day.Add(time.Second)
	end := at.Add(time.Minute)
	decisions := 0
	for t0 := at; t0.Before(end); t0 = t0.Add(time.Second) {
		dec, err := decideBounded(store.Due{At: at, Key: "j"}, value, t0, cals)
		if err != nil {
			t.Fatal(err)
		}
		decisions++
		if len(dec.Plan.Fires) > 0 {
			t.Fatalf("fired on a calendar date: %v", dec.Plan.Fires)
		}
		if dec.Move.To.IsZero() {
			break
		}
		at = dec.Move.To
	}
	if per := cals.calls / decisions; per > 100 {
		t.Fatalf("%d due decisions in 60 s of shard time for one job excluded for 5000 days, %d calendar lookups (%d per decision)", decisions, cals.calls, per)
	}
}
