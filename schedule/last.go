package schedule

import "time"

// Last returns the latest fire time in (after, upTo], or zero if there is
// none. It bisects on the start of Next (Next is non-decreasing), so it
// costs about 65 Next calls however far back the last fire is and however
// many fires lie in between (walking forward from an old time cost up to
// 500,000 Next calls, ~15 ms, for a cron like "* * * 1 *" in November).
func Last(s Schedule, after, upTo time.Time) time.Time {
	first := s.Next(after)
	if first.IsZero() || first.After(upTo) {
		return time.Time{}
	}
	// before(x): some fire after x is at or before upTo; true at first-1ns,
	// false at upTo. Find the last x where it holds, to the second, then to
	// the nanosecond; the fire after that x is the last one.
	before := func(x time.Time) bool { n := s.Next(x); return !n.IsZero() && !n.After(upTo) }
	lo, hi := floorSec(first.Add(-1)), floorSec(upTo)+1
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if before(time.Unix(mid, 0)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	base := time.Unix(lo, 0)
	var loNs, hiNs int64 = 0, int64(time.Second)
	for hiNs-loNs > 1 {
		mid := loNs + (hiNs-loNs)/2
		if before(base.Add(time.Duration(mid))) {
			loNs = mid
		} else {
			hiNs = mid
		}
	}
	return s.Next(base.Add(time.Duration(loNs)))
}

// floorSec is t's Unix second, rounded down.
func floorSec(t time.Time) int64 { return t.Unix() }

// NextN returns up to n fire times after t.
func NextN(s Schedule, t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for at := s.Next(t); !at.IsZero() && len(out) < n; at = s.Next(at) {
		out = append(out, at)
	}
	return out
}
