// Package schedule parses job schedules (cron, every, at) and computes fire times, with explicit time-zone and DST rules.
//
// A Spec is what a user writes; Parse validates it and returns a Schedule whose
// Next method answers "first fire time strictly after t". Next is
// allocation-free and safe for concurrent use. See docs/schedules.md for the
// exact semantics, in particular the daylight-saving rules for cron schedules:
//
//   - a wall time skipped by a DST gap fires once, at the first instant after
//     the gap (several skipped wall times collapse into that one instant);
//   - a wall time repeated by a fall-back transition fires once, at its first
//     (earlier) occurrence.
//
// Both are defaults: a cron Spec's DST policy may skip wall times in a gap
// instead, and fire repeated wall times at their last occurrence or at both.
// Cron expressions also take Quartz-style calendar items: L, L-n, nW, LW in
// day-of-month and d#n, dL in day-of-week.
package schedule

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	// The IANA database for callers outside this package that still use
	// time.LoadLocation; schedules resolve zones from zones.go only.
	_ "time/tzdata"
)

// Spec is a job's schedule as written by a user. Exactly one of Cron, Every, At is set.
type Spec struct {
	Cron  string        // 5 fields (min hour dom month dow), 6 fields (seconds first), or a descriptor: @yearly @annually @monthly @weekly @daily @midnight @hourly. (@every is NOT accepted in Cron: use Every.)
	Every time.Duration // interval, >= 1s
	At    time.Time     // one-shot instant
	TZ    string        // IANA zone name; "" means UTC. Applies to Cron (Every and At are absolute).
	Start time.Time     // optional: no fire before Start (zero = unbounded)
	End   time.Time     // optional: no fire after End (zero = unbounded)
	DST   DST           // cron only: the daylight-saving policy (zero = shift, first)
	// Also holds further schedules: the Spec fires at the union of its own
	// times and theirs, once per instant (two members firing at the same
	// instant fire once). A member sets Cron, Every or At and may set TZ
	// and DST; Start and End are this Spec's, for every member. At most
	// MaxSpecs members in all (this Spec counts). nil: none.
	Also []Spec
	// Exclude removes times from the union (see Exclusions). Zero: none.
	Exclude Exclusions
}

// DST is a cron schedule's daylight-saving policy. The zero value is the
// default: Gap "" means GapShift and Overlap "" means OverlapFirst.
type DST struct {
	// Gap says what a wall time that a spring-forward transition skips does:
	// GapShift (fire when the gap ends) or GapSkip (do not fire).
	Gap string
	// Overlap says when a wall time that a fall-back transition repeats
	// fires: OverlapFirst, OverlapLast, or OverlapBoth (two fires, at two
	// distinct instants).
	Overlap string
}

// DST policy values.
const (
	GapShift     = "shift"
	GapSkip      = "skip"
	OverlapFirst = "first"
	OverlapLast  = "last"
	OverlapBoth  = "both"
)

// IsZero reports whether d is the zero (default) policy.
func (d DST) IsZero() bool { return d == DST{} }

// Normalize returns d with its defaults made explicit as "" (so that "shift"
// and "" are the same policy, one Cache entry and one stored form).
func (d DST) Normalize() DST {
	if d.Gap == GapShift {
		d.Gap = ""
	}
	if d.Overlap == OverlapFirst {
		d.Overlap = ""
	}
	return d
}

// Schedule is a parsed Spec. Safe for concurrent use.
type Schedule interface {
	// Next returns the first fire time strictly after t, or the zero time if there is none (one-shot already past, or past End).
	Next(t time.Time) time.Time
}

// Error is the typed validation error returned by Parse. Field is the JSON
// name of the offending field ("cron", "every", "at", "tz", "start", "end",
// "dst", or "schedule" when the kind itself is wrong); Reason is a human sentence.
type Error struct {
	Field, Reason string
}

// Error implements error, e.g. "schedule: cron: expected 5 or 6 fields, got 3".
func (e *Error) Error() string {
	return "schedule: " + e.Field + ": " + e.Reason
}

func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// MinEvery is the smallest accepted Spec.Every.
const MinEvery = time.Second

// Supported instant range for Next arguments: about ±35 million years around
// 1970. Outside it, Next clamps t (below) or returns the zero time (above).
const (
	maxUnix = 1 << 50
	minUnix = -(1 << 50)
)

// Parse validates s and returns its Schedule. Every validation failure is a
// *Error.
func Parse(s Spec) (Schedule, error) {
	if len(s.Also) == 0 && s.Exclude.IsZero() {
		return parseOne(s)
	}
	return parseSet(s)
}

// parseOne parses a Spec without members or exclusions.
func parseOne(s Spec) (Schedule, error) {
	kinds := 0
	if s.Cron != "" {
		kinds++
	}
	if s.Every != 0 {
		kinds++
	}
	if !s.At.IsZero() {
		kinds++
	}
	if kinds != 1 {
		return nil, errorf("schedule", "exactly one of cron, every, at must be set, got %d", kinds)
	}

	loc, err := loadLocation(s.TZ)
	if err != nil {
		return nil, err
	}

	for _, f := range [...]struct {
		name string
		t    time.Time
	}{{"start", s.Start}, {"end", s.End}, {"at", s.At}} {
		if !f.t.IsZero() && (f.t.Year() < 1 || f.t.Year() > 9999) {
			return nil, errorf(f.name, "year %d out of range [1, 9999]", f.t.Year())
		}
	}
	b := bounds{start: s.Start, end: s.End, hasStart: !s.Start.IsZero(), hasEnd: !s.End.IsZero()}
	if b.hasStart && b.hasEnd && s.End.Before(s.Start) {
		return nil, errorf("end", "end %s is before start %s", s.End.Format(time.RFC3339Nano), s.Start.Format(time.RFC3339Nano))
	}

	if !s.DST.IsZero() {
		if s.Cron == "" {
			return nil, errorf("dst", "a DST policy applies to cron schedules only (every and at are absolute instants, which DST does not move)")
		}
		switch s.DST.Gap {
		case "", GapShift, GapSkip:
		default:
			return nil, errorf("dst", "unknown gap policy %q; want shift or skip", s.DST.Gap)
		}
		switch s.DST.Overlap {
		case "", OverlapFirst, OverlapLast, OverlapBoth:
		default:
			return nil, errorf("dst", "unknown overlap policy %q; want first, last or both", s.DST.Overlap)
		}
	}

	switch {
	case s.Cron != "":
		return parseCron(s.Cron, loc, b, s.DST)
	case s.Every != 0:
		if s.Every < MinEvery {
			return nil, errorf("every", "must be at least %s, got %s", MinEvery, s.Every)
		}
		origin := time.Unix(0, 0)
		if b.hasStart {
			origin = s.Start
		}
		return &everySchedule{
			b:         b,
			loc:       loc,
			period:    int64(s.Every),
			originSec: origin.Unix(),
			originNs:  int64(origin.Nanosecond()),
		}, nil
	default:
		if (b.hasStart && s.At.Before(s.Start)) || (b.hasEnd && s.At.After(s.End)) {
			return nil, errorf("at", "%s is outside start/end", s.At.Format(time.RFC3339Nano))
		}
		return &atSchedule{at: s.At.In(loc)}, nil
	}
}

var locations sync.Map // zone name -> *time.Location (successful loads only)

// loadLocation resolves an IANA name from the database the binary carries
// (zones.go); "" is UTC and "Local" is rejected because it would make
// schedules depend on the host configuration.
func loadLocation(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, errorf("tz", `"Local" is not allowed, use an IANA zone name such as "Europe/Berlin"`)
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
	}
	loc, ok := loadZone(name)
	if !ok {
		return nil, errorf("tz", "unknown time zone %q (not in the zone database Chronos carries; see docs/schedules.md)", name)
	}
	locations.Store(name, loc)
	return loc, nil
}

// bounds holds the optional Start/End of a schedule.
type bounds struct {
	start, end       time.Time
	hasStart, hasEnd bool
}

// from returns the instant the search must start from: t, or Start-1ns if t
// is before Start, so that Start itself is a possible fire time.
func (b *bounds) from(t time.Time) time.Time {
	if b.hasStart && t.Before(b.start) {
		return b.start.Add(-1)
	}
	return t
}

// everySchedule fires at origin + k*period.
type everySchedule struct {
	b         bounds
	loc       *time.Location
	period    int64 // nanoseconds, >= 1e9
	originSec int64
	originNs  int64
}

func (e *everySchedule) Next(t time.Time) time.Time {
	t = e.b.from(t)
	sec := t.Unix()
	if sec > maxUnix {
		return time.Time{}
	}
	if sec < minUnix {
		t = time.Unix(minUnix, 0)
		sec = minUnix
	}
	// r = (t - origin) mod period, computed exactly in 128 bits:
	// diff = dsec*1e9 + dns, with 0 <= dns < 1e9.
	dsec := sec - e.originSec
	dns := int64(t.Nanosecond()) - e.originNs
	if dns < 0 {
		dns += 1e9
		dsec--
	}
	rs := dsec % e.period
	if rs < 0 {
		rs += e.period
	}
	hi, lo := bits.Mul64(uint64(rs), 1e9)
	var carry uint64
	lo, carry = bits.Add64(lo, uint64(dns), 0)
	hi += carry
	r := int64(bits.Rem64(hi, lo, uint64(e.period)))
	n := t.Add(time.Duration(e.period - r))
	if e.b.hasEnd && n.After(e.b.end) {
		return time.Time{}
	}
	return n.In(e.loc)
}

// atSchedule fires once. Parse guarantees at is within Start/End.
type atSchedule struct {
	at time.Time
}

func (a *atSchedule) Next(t time.Time) time.Time {
	if a.at.After(t) {
		return a.at
	}
	return time.Time{}
}

// Ensure trimmed descriptors are checked exactly (case-sensitive).
var descriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

func isTZPrefix(f string) bool {
	return strings.HasPrefix(f, "TZ=") || strings.HasPrefix(f, "CRON_TZ=")
}
