package scheduler

import (
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// withCalendars is the schedule of due times s of job record rec without
// the times up to upTo whose scheduled date a named calendar it excludes
// holds now: the fires an advance plans (a time a calendar excludes is
// neither fired nor counted as missed). Times after upTo are not looked
// up: the due index keeps s itself (see indexNext), and each is decided
// when it is due.
func withCalendars(s schedule.Schedule, rec *codecs.JobRecord, cals schedule.CalendarSource, upTo time.Time) schedule.Schedule {
	x := rec.Job.Spec.Exclude
	if len(x.Calendars) == 0 || cals == nil {
		return s
	}
	var scheduled func(time.Time) time.Time
	if d, ok := s.(*codecs.DueSchedule); ok {
		scheduled = d.Scheduled
	}
	return schedule.WithCalendarsUpTo(s, x, cals, scheduled, upTo)
}

// plannedFrom is what an advance or a command plans for job record rec
// from its due time at: its schedule s without the times named calendars
// exclude up to upTo (withCalendars), and its first time at or after at in
// it (at itself may be one they exclude now; zero: none).
func plannedFrom(s schedule.Schedule, rec *codecs.JobRecord, cals schedule.CalendarSource, upTo, at time.Time) (schedule.Schedule, time.Time) {
	planned := withCalendars(s, rec, cals, upTo)
	if planned == s {
		return s, at
	}
	return planned, planned.Next(at.Add(-time.Nanosecond))
}

// indexNext is where the due index holds a job that names calendars once
// an advance has handled it through upTo: its schedule's next time
// without the calendars (next, from the plan, skipped the times they
// exclude now). Whether such a time fires is decided when it is due, with
// the calendars as they are then: a date added to or removed from a
// calendar applies from the job's next time on, and a job whose
// remaining times a calendar excludes does not complete. A plan cut at
// an unsent fire (next <= upTo) keeps it.
func indexNext(s schedule.Schedule, rec *codecs.JobRecord, next, upTo time.Time) time.Time {
	if len(rec.Job.Spec.Exclude.Calendars) == 0 || (!next.IsZero() && !next.After(upTo)) {
		return next
	}
	if n := s.Next(upTo); !n.IsZero() && (next.IsZero() || n.Before(next)) {
		return n
	}
	return next
}
