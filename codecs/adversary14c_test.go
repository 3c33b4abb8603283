//go:build adversary14c

// Adversary 14c: breaks of issue 14's promises about named calendars and
// jitter (docs/schedules.md). Run:
//
//	go test -tags adversary14c -count=1 -run Adversary14c ./codecs/
package codecs

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// countingDays holds one calendar, "hol", and counts lookups; past limit
// it answers false (holds nothing), so that a runaway walk ends.
type countingDays struct {
	days  map[schedule.Date]bool
	calls int
	limit int
}

func (c *countingDays) HasDate(name string, d schedule.Date) bool {
	c.calls++
	return c.calls <= c.limit && name == "hol" && c.days[d]
}

// Promise (issue 14: "huge calendars: ... a GET that takes seconds"):
// GET /v1/jobs/{id} lists an active job's next_fires skipping its named
// calendars (views/jobs.go readModel: schedule.WithCalendars over the
// job's due schedule with d.Scheduled). For a jittered job that mapping
// makes WithCalendars step one due time at a time through every excluded
// day instead of jumping to its end. A valid job (every 1s, jitter
// 500ms) naming a calendar of 30 consecutive days (a change freeze): the
// first next fire after the freeze starts takes more than 1,000,000
// lookups (~1.3 us each with views.Calendars: seconds per GET); a
// calendar of 5000 consecutive dates, the most, ~432 million. Asserted:
// at most 1000 lookups.
func TestAdversary14cGetNextFiresWalksJitteredCalendar(t *testing.T) {
	job, err := JobDef{Every: "1s", Jitter: "500ms", Exclude: &ExcludeDef{Calendars: []string{"hol"}}}.Validate(DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.Parse(job.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := &JobRecord{Version: 1, Status: StatusActive, Job: job}
	due := JobSchedule("j", rec, s).(*DueSchedule)
	freeze := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cals := &countingDays{days: map[schedule.Date]bool{}, limit: 1_000_000}
	for i := range 30 {
		cals.days[schedule.DateOf(freeze.AddDate(0, 0, i))] = true
	}
	// As views/jobs.go computes the first of next_fires.
	cal := schedule.WithCalendars(due, job.Spec.Exclude, cals, due.Scheduled)
	first := cal.Next(freeze)
	if cals.calls > 1000 {
		t.Fatalf("the first next fire of a jittered every-1s job naming a 30-day calendar took %d calendar lookups (limit %d; first %s)", cals.calls, cals.limit, first)
	}
}
