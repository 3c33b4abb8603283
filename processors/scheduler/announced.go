package scheduler

import (
	"sync/atomic"
	"time"
)

// announced is the latest time of an "advance to T" this instance's
// scheduler has consumed, over all its partitions: the clock group's latest
// announcement as far as this instance has seen it. Its zero value is
// ready; safe for concurrent use (the partitions' callbacks note, a scrape
// reads).
type announced struct{ unixNanos atomic.Int64 }

// note raises the latest announced time to t (never lowers it).
func (a *announced) note(t time.Time) {
	if t.IsZero() {
		return
	}
	n := t.UnixNano()
	for {
		cur := a.unixNanos.Load()
		if n <= cur || a.unixNanos.CompareAndSwap(cur, n) {
			return
		}
	}
}

// get returns the latest announced time, zero before the first.
func (a *announced) get() time.Time {
	n := a.unixNanos.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Announced returns the latest time of an "advance to T" this instance has
// consumed on any of its partitions (zero before the first): the clock
// group's announced time, which the broker's clock bounds (clock.Bound), as
// this instance has received it. Held since the instance started, across
// rebalances; it never moves back. A partition's lateness is measured from
// it and from the clock table (the instance's announced time, with
// clock.Announcements), so a pod's own wall clock, fast, slow or stalled,
// does not enter. Safe for concurrent use.
func (s *Scheduler) Announced() time.Time { return s.announced.get() }
