package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Exclusions are times a schedule does not fire: whole days of a zone and
// ranges of instants. An excluded time is not a fire time at all: Next
// passes over it, so it is neither fired nor counted as missed. The zero
// value excludes nothing.
type Exclusions struct {
	// TZ is the IANA zone of Dates ("" is UTC).
	TZ string
	// Dates are days (in TZ) on which nothing fires, from local midnight to
	// the next one; at most MaxExcludeDates.
	Dates []Date
	// Ranges are spans of instants in which nothing fires; at most
	// MaxExcludeRanges.
	Ranges []Range
	// Calendars names shared lists of dates (in TZ) on which nothing
	// fires. Parse does not apply them: their dates change while the
	// schedule stays, so whoever fires the schedule looks them up at
	// each fire (see WithCalendars). At most MaxExcludeCalendars.
	Calendars []string
}

// IsZero reports whether x excludes nothing and names no zone.
func (x Exclusions) IsZero() bool {
	return x.TZ == "" && len(x.Dates) == 0 && len(x.Ranges) == 0 && len(x.Calendars) == 0
}

// Date is a day of the calendar, without a zone.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDate parses "YYYY-MM-DD" (years 1 to 9999, a day that exists).
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) {
		return Date{}, fmt.Errorf("not a date like 2026-12-25: %q", s)
	}
	if t.Year() < 1 {
		return Date{}, fmt.Errorf("year %d out of range [1, 9999]: %q", t.Year(), s)
	}
	return DateOf(t), nil
}

// DateOf is the date of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// String formats d as YYYY-MM-DD.
func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day) }

// Compare orders dates: -1, 0 or +1 as d is before, equal to or after e.
func (d Date) Compare(e Date) int {
	switch k, l := d.key(), e.key(); {
	case k < l:
		return -1
	case k > l:
		return 1
	}
	return 0
}

// key orders dates.
func (d Date) key() int64 { return int64(d.Year)*512 + int64(d.Month)*32 + int64(d.Day) }

// Range is the span of instants [From, To): From included, To not.
type Range struct {
	From, To time.Time
}

// excluded filters a schedule's times.
type excluded struct {
	inner  Schedule
	loc    *time.Location
	days   []int64 // Date.key, sorted, unique
	ranges []Range // sorted by From, disjoint and not touching
}

func newExcluded(inner Schedule, x Exclusions) (Schedule, error) {
	loc, err := loadLocation(x.TZ)
	if err != nil {
		return nil, &Error{Field: "tz", Reason: "the zone of exclude.dates: " + err.(*Error).Reason}
	}
	if len(x.Dates) > MaxExcludeDates {
		return nil, errorf("exclude.dates", "%d dates, the most is %d", len(x.Dates), MaxExcludeDates)
	}
	if len(x.Ranges) > MaxExcludeRanges {
		return nil, errorf("exclude.ranges", "%d ranges, the most is %d", len(x.Ranges), MaxExcludeRanges)
	}
	if len(x.Calendars) > MaxExcludeCalendars {
		return nil, errorf("exclude.calendars", "%d calendars, the most is %d", len(x.Calendars), MaxExcludeCalendars)
	}
	e := &excluded{inner: inner, loc: loc}
	for i, d := range x.Dates {
		if d.Year < 1 || d.Year > 9999 || DateOf(time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)) != d {
			return nil, errorf(fmt.Sprintf("exclude.dates[%d]", i), "%s is not a date from 0001-01-01 to 9999-12-31", d)
		}
		e.days = append(e.days, d.key())
	}
	slices.Sort(e.days)
	e.days = slices.Compact(e.days)
	for i, r := range x.Ranges {
		if err := checkRange(r); err != nil {
			return nil, errorf(fmt.Sprintf("exclude.ranges[%d]", i), "%s", err)
		}
		e.ranges = append(e.ranges, r)
	}
	e.ranges = mergeRanges(e.ranges)
	return e, nil
}

func checkRange(r Range) error {
	for _, t := range []time.Time{r.From, r.To} {
		if t.IsZero() || t.Year() < 1 || t.Year() > 9999 {
			return fmt.Errorf("from and to must both be set, years 1 to 9999")
		}
	}
	if !r.From.Before(r.To) {
		return fmt.Errorf("from %s is not before to %s", r.From.UTC().Format(time.RFC3339Nano), r.To.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// mergeRanges sorts rs and joins those that overlap or touch.
func mergeRanges(rs []Range) []Range {
	slices.SortFunc(rs, func(a, b Range) int { return a.From.Compare(b.From) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && !r.From.After(out[n-1].To) {
			if r.To.After(out[n-1].To) {
				out[n-1].To = r.To
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// Next returns the inner schedule's first time after t that no exclusion
// covers: an excluded time moves the search to the end of what excludes it.
func (e *excluded) Next(t time.Time) time.Time {
	n := e.inner.Next(t)
	for !n.IsZero() {
		until, ok := e.coveredUntil(n)
		if !ok {
			return n
		}
		n = e.inner.Next(until.Add(-1))
	}
	return n
}

// coveredUntil reports whether n is excluded and, if so, the first instant
// after n that the same exclusion does not cover.
func (e *excluded) coveredUntil(n time.Time) (time.Time, bool) {
	i, found := slices.BinarySearchFunc(e.ranges, n, func(r Range, t time.Time) int { return r.From.Compare(t) })
	if !found {
		i-- // the last range that starts before n
	}
	if i >= 0 && n.Before(e.ranges[i].To) {
		return e.ranges[i].To, true
	}
	if len(e.days) > 0 {
		local := n.In(e.loc)
		if _, ok := slices.BinarySearch(e.days, DateOf(local).key()); ok {
			return dayEnd(local), true
		}
	}
	return time.Time{}, false
}

// dayEnd returns the first instant after t (in its location) whose local
// date differs from t's. It follows the zone's offsets, so a day that a
// DST transition shortens, lengthens or interrupts ends where its local
// date really changes: under t's offset the date changes at local
// midnight, unless the offset changes first (found by bisection, to the
// second: zones change offset at whole seconds).
func dayEnd(t time.Time) time.Time {
	day := DateOf(t)
	loc := t.Location()
	for range 8 {
		_, off := t.Zone()
		mid := time.Date(day.Year, day.Month, day.Day+1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(off) * time.Second)
		if offsetAt(mid, loc) == off {
			return mid
		}
		lo, hi := t.Unix(), mid.Unix() // offset off at lo, another at hi
		for hi-lo > 1 {
			m := lo + (hi-lo)/2
			if offsetAt(time.Unix(m, 0), loc) == off {
				lo = m
			} else {
				hi = m
			}
		}
		t = time.Unix(hi, 0).In(loc)
		if DateOf(t) != day {
			return t
		}
	}
	return t // a zone changing offset more than 8 times a day: Next walks on
}

func offsetAt(t time.Time, loc *time.Location) int {
	_, off := t.In(loc).Zone()
	return off
}

// String describes x for errors and the history.
func (x Exclusions) String() string {
	var parts []string
	for _, d := range x.Dates {
		parts = append(parts, d.String())
	}
	for _, r := range x.Ranges {
		parts = append(parts, r.From.UTC().Format(time.RFC3339Nano)+"/"+r.To.UTC().Format(time.RFC3339Nano))
	}
	return strings.Join(parts, ",")
}
