package schedule

import "time"

// Last returns the latest fire time in (after, upTo], or zero if there is
// none or it cannot be found within a bounded search (it widens a window
// back from upTo: a minute, an hour, a day, a month, a year, taking at most
// maxSteps Next calls per window). Used for display, not for firing.
func Last(s Schedule, after, upTo time.Time, maxSteps int) time.Time {
	for _, w := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour} {
		from := upTo.Add(-w)
		if from.Before(after) {
			from = after
		}
		var last time.Time
		at := s.Next(from)
		for steps := 0; !at.IsZero() && !at.After(upTo) && steps < maxSteps; steps++ {
			last = at
			at = s.Next(at)
		}
		if !last.IsZero() && (at.IsZero() || at.After(upTo)) {
			return last
		}
		if !from.After(after) {
			return last
		}
	}
	return time.Time{}
}

// NextN returns up to n fire times after t.
func NextN(s Schedule, t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for at := s.Next(t); !at.IsZero() && len(out) < n; at = s.Next(at) {
		out = append(out, at)
	}
	return out
}
