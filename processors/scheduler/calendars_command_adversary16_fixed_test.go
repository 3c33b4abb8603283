package scheduler

import (
	"testing"
	"time"
)

// TestAdv16CommandSettlesCalendarExcludedTime: promise (docs/topics.md,
// "Named calendars": "A time excluded this way is not dispatched"; only a
// backfill and max_fires are listed as not applying calendars).
//
// A job "z" (cron 09:00 daily, excluding calendar "hol", which holds
// 2026-03-10) is due 09:00 on the 10th. The advance to 09:05 spans two
// callbacks: its first chunk handles "a" and yields before reaching z. A
// put on z consumed between the callbacks first sends what z owes up to
// the advance's T under its current definition (Scheduler.handled), and
// handled plans on the schedule without the named calendars: z@09:00 of
// the holiday goes out. (No crash, no rebalance.)
func TestAdv16CommandSettlesCalendarExcludedTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 10, 8, 55, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, base)
	h.s.cfg.Calendars = fakeCalendars{"hol": {{Year: 2026, Month: 3, Day: 10}}}
	h.advance(base)
	h.drain()
	h.command("a", base, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"a":1}}}`)
	z := func(v int) string {
		return `{"v":1,"op":"put","job":{"cron":"0 9 * * *","exclude":{"calendars":["hol"]},"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"z":` + string(rune('0'+v)) + `}}}`
	}
	h.command("z", base, z(1))
	T := base.Add(10 * time.Minute)
	h.advance(T) // chunk 1: a, yields before z
	h.command("z", T, z(2))
	h.drain()
	h.advance(T.Add(time.Minute))
	h.drain()
	if got := h.fired()["z@2026-03-10T09:00:00Z"]; len(got) > 0 {
		t.Errorf("z@2026-03-10T09:00:00Z, a date calendar hol excludes, dispatched %d times: %v", len(got), got)
	}
}
