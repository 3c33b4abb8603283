package schedule

import (
	"fmt"
	"time"
)

// Limits of a Spec with several members or exclusions.
const (
	// MaxSpecs is the most schedules one Spec holds (itself and Also).
	MaxSpecs = 16
	// MaxExcludeDates is the most dates in Exclusions.Dates.
	MaxExcludeDates = 1000
	// MaxExcludeRanges is the most ranges in Exclusions.Ranges.
	MaxExcludeRanges = 100
	// MaxExcludeCalendars is the most names in Exclusions.Calendars.
	MaxExcludeCalendars = 16
)

// parseSet parses a Spec with members (Also) or exclusions: the union of
// its members' times, without the excluded ones.
func parseSet(s Spec) (Schedule, error) {
	if n := 1 + len(s.Also); n > MaxSpecs {
		return nil, errorf("schedules", "%d schedules, the most is %d", n, MaxSpecs)
	}
	base := s
	base.Also, base.Exclude = nil, Exclusions{}
	first, err := parseOne(base)
	if err != nil {
		return nil, err
	}
	var sch Schedule = first
	if len(s.Also) > 0 {
		u := &unionSchedule{members: make([]Schedule, 0, 1+len(s.Also))}
		u.members = append(u.members, first)
		for i, m := range s.Also {
			ms, err := parseMember(m, s.Start, s.End)
			if err != nil {
				e := err.(*Error)
				return nil, errorf(fmt.Sprintf("schedules[%d].%s", i+1, e.Field), "%s", e.Reason)
			}
			u.members = append(u.members, ms)
		}
		sch = u
	}
	if s.Exclude.IsZero() {
		return sch, nil
	}
	return newExcluded(sch, s.Exclude)
}

// parseMember parses one of a Spec's Also members with the Spec's bounds.
func parseMember(m Spec, start, end time.Time) (Schedule, error) {
	if len(m.Also) > 0 || !m.Exclude.IsZero() {
		return nil, errorf("schedule", "a member schedule cannot hold members or exclusions of its own")
	}
	if !m.Start.IsZero() || !m.End.IsZero() {
		return nil, errorf("schedule", "start and end apply to every member: set them once, on the job")
	}
	m.Start, m.End = start, end
	return parseOne(m)
}

// unionSchedule fires at every time of any of its members, once per
// instant.
type unionSchedule struct {
	members []Schedule
}

// Next is the earliest of the members' next times: two members due at the
// same instant give that instant once, and the next call, strictly after
// it, passes both.
func (u *unionSchedule) Next(t time.Time) time.Time {
	var best time.Time
	for _, m := range u.members {
		if n := m.Next(t); !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	return best
}
