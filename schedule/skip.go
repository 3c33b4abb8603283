package schedule

import (
	"math"
	"time"
)

// Skip passes over the fires of s in [from, before) in closed form, keeping
// the last keep of them (keep >= 0): it returns how many fires it skipped
// and the first fire it did not skip (the first kept fire, or the first fire
// at or after before; zero if there is none). ok is false when s cannot
// count in closed form (cron and one-shot schedules; callers walk with Next
// instead) or the span is too long to count exactly (over ~290 years).
// Safe for concurrent use, allocation-free.
func Skip(s Schedule, from, before time.Time, keep int64) (skipped int64, resume time.Time, ok bool) {
	e, isEvery := s.(*everySchedule)
	if !isEvery || keep < 0 {
		return 0, time.Time{}, false
	}
	first := e.Next(from.Add(-1))
	if first.IsZero() || !first.Before(before) {
		return 0, first, true
	}
	upper := before // counted fires are < upper
	if e.b.hasEnd && e.b.end.Before(before) {
		upper = e.b.end.Add(1)
	}
	span := upper.Sub(first)
	if span >= math.MaxInt64-time.Duration(e.period) {
		return 0, time.Time{}, false
	}
	n := (int64(span) + e.period - 1) / e.period // fires first + k*period < upper
	if n <= keep {
		return 0, first, true
	}
	skipped = n - keep
	// The fire after the last skipped one (Next applies End).
	return skipped, e.Next(first.Add(time.Duration((skipped - 1) * e.period))), true
}
